#!/usr/bin/env bash
# Node 22 (from the npm registry, no downloads elsewhere), the MCP conformance suite and the Inspector CLI,
# pinned, into .tools/node22 (gitignored). The conformance suite needs node >= 22; the system node is 20.
# Idempotent: does nothing when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NODE_PIN="22.23.3"
CONFORMANCE_PIN="0.2.0-alpha.12"
INSPECTOR_PIN="2.12.0"
prefix=.tools/node22
stamp="$prefix/.stamp"
want="node@$NODE_PIN conformance@$CONFORMANCE_PIN inspector@$INSPECTOR_PIN"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$prefix/node_modules/.bin/node" ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "setup.d/30-node22-conformance: npm is required (apt-get install npm)" >&2
  exit 1
fi
mkdir -p "$prefix"
[ -f "$prefix/package.json" ] || echo '{"private": true}' > "$prefix/package.json"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
  "node@$NODE_PIN" "@modelcontextprotocol/conformance@$CONFORMANCE_PIN" \
  "@modelcontextprotocol/inspector@$INSPECTOR_PIN" >/dev/null
version="$("$prefix/node_modules/.bin/node" --version)"
if [ "$version" != "v$NODE_PIN" ]; then
  echo "setup.d/30-node22-conformance: expected node v$NODE_PIN, got $version" >&2
  exit 1
fi
echo "$want" > "$stamp"
