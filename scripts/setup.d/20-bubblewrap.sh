#!/usr/bin/env bash
# System programs execute_bash needs: bubblewrap (the OS sandbox), gawk (awk runs as `gawk --sandbox`;
# mawk has no sandbox mode), jq and tree (allowlisted programs the tests run). Idempotent and quiet; fails loudly when it cannot install.
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v gawk >/dev/null 2>&1 || missing+=(gawk)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v tree >/dev/null 2>&1 || missing+=(tree)
[ "${#missing[@]}" -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup.d/20-bubblewrap: missing ${missing[*]} and no apt-get; install them with your package manager" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  $sudo apt-get update -q >/dev/null
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
for tool in bwrap gawk jq tree; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup.d/20-bubblewrap: $tool still missing after install" >&2; exit 1; }
done
