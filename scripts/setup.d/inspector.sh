#!/usr/bin/env bash
# The MCP Inspector CLI, pinned, in a project-local prefix (.tools/npm, gitignored), so the Inspector
# acceptance tests never download anything at test time. Idempotent: does nothing when the pinned version
# is already there. Fails loudly when npm is missing or the install fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version="2.12.0"
prefix="$here/.tools/npm"
manifest="$prefix/node_modules/@modelcontextprotocol/inspector/package.json"
if [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest" \
    && [ -x "$prefix/node_modules/.bin/mcp-inspector" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup.d/inspector.sh: npm (Node.js >= 20) is required to install the MCP Inspector" >&2
  exit 1
fi
mkdir -p "$prefix"
# The Inspector 2.x declares node >= 22.19; its CLI runs on node 20 (engine warnings only).
npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error \
  "@modelcontextprotocol/inspector@$version" >/dev/null
if [ ! -x "$prefix/node_modules/.bin/mcp-inspector" ]; then
  echo "setup.d/inspector.sh: the install did not produce $prefix/node_modules/.bin/mcp-inspector" >&2
  exit 1
fi
