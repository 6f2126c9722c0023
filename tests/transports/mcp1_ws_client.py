# type: ignore  # runs under the mcp 1.x venv (.tools/mcp1-venv), whose API pyright cannot see from here
"""Drive /ws with the mcp 1.x `websocket_client`: list the tools, run the calls given as JSON, print JSON.

usage: mcp1_ws_client.py WS_URL CALLS_JSON   (CALLS_JSON: [{"name": ..., "arguments": {...}}, ...])
Prints {"protocol_version", "tools", "results": [{"name", "is_error", "structured"}], "ping": true}.
"""

import json
import sys
import warnings

import anyio
from mcp import ClientSession
from mcp.client.websocket import websocket_client


async def main(url: str, calls: list[dict]) -> None:
    with anyio.fail_after(60):
        await run(url, calls)


async def run(url: str, calls: list[dict]) -> None:
    async with websocket_client(url) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        await session.send_ping()
        results = []
        for call in calls:
            result = await session.call_tool(call["name"], call["arguments"])
            results.append({"name": call["name"], "is_error": result.isError, "structured": result.structuredContent})
        print(
            json.dumps(
                {
                    "protocol_version": init.protocolVersion,
                    "tools": [tool.name for tool in tools.tools],
                    "results": results,
                    "ping": True,
                }
            )
        )


if __name__ == "__main__":
    warnings.simplefilter("ignore", DeprecationWarning)  # websocket_client is deprecated in 1.x, and that is the point
    anyio.run(main, sys.argv[1], json.loads(sys.argv[2]))
