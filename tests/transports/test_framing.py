"""A stdio line or WebSocket text frame that is not a JSON-RPC message gets a JSON-RPC error, not silence
(JSON-RPC 2.0 §5: -32700 for invalid JSON, -32600 for anything else, with the request's id when readable);
a malformed response gets no answer. The session goes on after either."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from feature_server import build_feature_server
from harness import TOKEN, http_client, serve_in_process
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from repo_sandbox.transports.framing import BadFrame, read_message

pytestmark = pytest.mark.e2e

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))
PING = json.dumps({"jsonrpc": "2.0", "id": "after", "method": "ping"})

BAD_FRAMES: list[tuple[str, int | None, object]] = [
    # (frame, expected error code or None for no answer, expected id)
    # not JSON at all
    ("this is not json", -32700, None),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700, None),
    # JSON, but not one message
    ("[]", -32600, None),
    ('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, None),  # batches are not part of MCP
    ('"a string"', -32600, None),
    ("null", -32600, None),
    # an object that is not a valid request: the id is echoed when it is one
    ('{"jsonrpc": "2.0", "id": 9}', -32600, 9),
    ('{"id": "a", "method": "ping"}', -32600, "a"),
    ('{"jsonrpc": "1.0", "id": 4, "method": "ping"}', -32600, 4),
    ('{"jsonrpc": "2.0", "id": 5, "method": 7}', -32600, 5),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "method": "ping", "params": "x"}', -32600, None),
    # a malformed response is not answered (two peers must not answer each other's errors for ever)
    ('{"jsonrpc": "2.0", "id": 3, "result": 1, "error": {"code": 1}}', None, None),
    ('{"jsonrpc": "2.0", "id": 3, "error": "nope"}', None, None),
    # nor is a blank line
    ("   ", None, None),
    # valid JSON nested deeper than any parser here reads: not a message this server takes (its id when readable)
    ("[" * 2000 + "]" * 2000, -32600, None),
    ('{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"x": ' + "[" * 2000 + "]" * 2000 + "}}", -32600, 6),
    ('{"jsonrpc": "2.0", "method": "ping", "params": {"x": ' + "[{" * 150 + "}]" * 150 + '}, "id": "d"}', -32600, "d"),
    # ... but unbalanced brackets at that depth are still not JSON
    ("[" * 2000, -32700, None),
    ("[" * 1000 + "}" * 1000, -32700, None),
]
BOM_PING = "\ufeff" + json.dumps({"jsonrpc": "2.0", "id": "bom", "method": "ping"})
"""A leading byte-order mark is ignored (RFC 8259 §8.1): the ping is answered."""


@pytest.mark.parametrize(("frame", "code", "request_id"), BAD_FRAMES)
def test_a_frame_that_is_not_a_message_is_answered_by_the_json_rpc_rules(
    frame: str, code: int | None, request_id: object
) -> None:
    parsed = read_message(frame)
    assert isinstance(parsed, BadFrame)
    if code is None:
        assert parsed.reply is None
        return
    assert parsed.reply is not None
    assert (parsed.reply.error.code, parsed.reply.id) == (code, request_id)
    assert frame not in parsed.reply.error.message or not frame  # the input is never quoted back


def expected_replies() -> list[dict[str, Any]]:
    return [{"id": request_id, "code": code} for _, code, request_id in BAD_FRAMES if code is not None]


def brief(reply: dict[str, Any]) -> dict[str, Any]:
    return {"id": reply.get("id"), "code": reply.get("error", {}).get("code")}


def test_stdio_answers_every_bad_line_and_keeps_serving(tmp_path: Path) -> None:
    lines = [frame.replace("\n", " ") for frame, _, _ in BAD_FRAMES] + [BOM_PING, PING]
    process = subprocess.Popen(
        [REPO_SANDBOX, "--root", str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    watchdog = threading.Timer(30, process.kill)  # bounds the blocking reads: a killed server ends them
    watchdog.start()
    try:
        process.stdin.write("".join(line + "\n" for line in lines).encode())
        process.stdin.flush()
        replies: list[dict[str, Any]] = []
        while not replies or replies[-1].get("id") != "after":  # the stdin pipe stays open until the ping is answered
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            replies.append(json.loads(line))
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert [brief(reply) for reply in replies[:-2]] == expected_replies()
    assert replies[-2:] == [{"jsonrpc": "2.0", "id": i, "result": {}} for i in ("bom", "after")]


@pytest.mark.anyio
async def test_websocket_answers_every_bad_text_frame_and_keeps_the_connection() -> None:
    server, _ = build_feature_server()
    replies: list[dict[str, Any]] = []
    with anyio.fail_after(20):
        async with serve_in_process(server) as running:
            url = f"{running.ws_url}?token={TOKEN}"
            async with connect(url, subprotocols=[Subprotocol("mcp")]) as ws:
                for frame, _, _ in BAD_FRAMES:
                    await ws.send(frame)
                await ws.send(BOM_PING)
                await ws.send(PING)
                while not replies or replies[-1].get("id") != "after":
                    replies.append(json.loads(await ws.recv()))
    assert [brief(reply) for reply in replies[:-2]] == expected_replies()
    assert replies[-2:] == [{"jsonrpc": "2.0", "id": i, "result": {}} for i in ("bom", "after")]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
DEEP_BODIES = [(frame, code, request_id) for frame, code, request_id in BAD_FRAMES if len(frame) > 1000]
DEEP_BODIES += [("\ufeff" + frame, code, request_id) for frame, code, request_id in DEEP_BODIES[:2]]


@pytest.mark.anyio
async def test_http_reads_bodies_as_frames_are_read() -> None:
    server, _ = build_feature_server()
    with anyio.fail_after(20):
        async with serve_in_process(server) as running, http_client() as http:
            initialized = await http.post(
                running.mcp_url, content=("\ufeff" + json.dumps(INITIALIZE)).encode(), headers=MCP_HEADERS
            )
            answers = [
                await http.post(running.mcp_url, content=frame.encode(), headers=MCP_HEADERS)
                for frame, _, _ in DEEP_BODIES
            ]
    assert initialized.status_code == 200 and "mcp-session-id" in initialized.headers
    assert [(answer.status_code, brief(answer.json())) for answer in answers] == [
        (400, {"id": request_id, "code": code}) for _, code, request_id in DEEP_BODIES
    ]
