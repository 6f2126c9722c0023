#!/usr/bin/env bash
# An mcp 1.x client in its own venv (.tools/mcp1-venv, gitignored): its `websocket_client` is the reference
# client our /ws endpoint must stay compatible with (mcp 2.x has no WebSocket transport).
# Idempotent: does nothing when the pinned versions are installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
MCP1_PIN="1.30.0"
WEBSOCKETS_PIN="15.0.1"
venv=.tools/mcp1-venv
stamp="$venv/.stamp"
want="mcp==$MCP1_PIN websockets==$WEBSOCKETS_PIN"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP1_PIN" "websockets==$WEBSOCKETS_PIN" >&2
"$venv/bin/python" -c 'from mcp.client.websocket import websocket_client' 2>/dev/null
echo "$want" > "$stamp"
