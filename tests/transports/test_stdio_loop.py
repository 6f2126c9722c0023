"""The event loop's own stdio transport: line framing, large messages both ways, the stream claim (children and
stray writes never touch the wire, fd 0/1 and their blocking mode restored), and the SDK's transport for
descriptors that cannot be polled."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}

ECHO_SERVER = textwrap.dedent(
    """
    import os, sys, anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage
    from repo_sandbox.transports.stdio import stdio_streams

    async def main():
        before = [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (0, 1)]
        firsts = []
        async with stdio_streams(after_first_message=lambda: firsts.append(1)) as (read_stream, write_stream):
            async with write_stream:  # closing it ends the writer, as the server does when the client leaves
                await serve(read_stream, write_stream)
        after = [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (0, 1)]
        print(f"restored={before == after} blocking={os.get_blocking(0) and os.get_blocking(1)} firsts={len(firsts)}",
              file=sys.stderr)

    async def serve(read_stream, write_stream):
        async for message in read_stream:  # a bad line never gets here: the transport answers it
            os.write(1, b"stray output\\n")  # fd 1 is stderr while serving
            request = message.message
            reply = {"jsonrpc": "2.0", "id": request.id,
                     "result": {"params": request.params, "stdin": os.read(0, 10).decode()}}
            await write_stream.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(reply)))

    anyio.run(main)
    """
)


def request(number: int, **params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping", "params": params}).encode()


def test_messages_are_framed_by_lines_and_large_ones_cross_the_pipes_whole() -> None:
    big = "x" * 300_000  # several reads in, several writes out (more than a pipe holds)
    stream = b"".join(
        [
            request(1, n=1) + b"\n" + request(2, n=2)[:10],  # two in one write, the second split
            request(2, n=2)[10:] + b"\r\n",  # ... and ended by CRLF
            b"this is not json\n",
            request(3, text=big) + b"\n",
            request(4, text="caf-").replace(b"caf-", b"caf\xc3\xa9 \xff") + b"\n",  # invalid UTF-8: U+FFFD
            request(5),  # the last line without its newline
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", ECHO_SERVER], input=stream, capture_output=True, timeout=60, check=True
    )
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    # the transport answers the bad line itself, so its answer may overtake the server's answer to request 2
    [parse_error] = [line for line in lines if "error" in line]
    assert parse_error == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: not valid JSON."},
    }
    replies = [line for line in lines if "result" in line]
    assert [reply["id"] for reply in replies] == [1, 2, 3, 4, 5]
    assert replies[2]["result"]["params"]["text"] == big
    assert replies[3]["result"]["params"]["text"] == "café \ufffd"
    assert all(reply["result"]["stdin"] == "" for reply in replies)  # fd 0 read the null device
    assert b"stray output" not in done.stdout
    assert done.stderr.count(b"stray output") == 5
    assert b"restored=True blocking=True firsts=1" in done.stderr


def test_a_regular_file_as_stdin_is_served_by_the_sdk_transport(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(INITIALIZE) + "\n")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [REPO_SANDBOX, "--root", str(tmp_path)], stdin=stdin, capture_output=True, timeout=60, check=True
        )
    (reply,) = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "repo-sandbox"


def test_a_failing_command_policy_stops_the_server_after_the_handshake(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[exec]\nallow = ["cat", "cksum"]\n'
        '[exec.rules.cksum]\nflags = ["-b"]\nallow_examples = ["cksum -b a"]\ndeny_examples = ["cksum -b b"]\n'
    )
    server = subprocess.Popen(
        [REPO_SANDBOX, "--root", str(tmp_path), "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    try:
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1  # answered first
        assert server.wait(timeout=60) == 2  # then stopped, with its stdin still open
        error = server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
        for pipe in (server.stdin, server.stdout, server.stderr):
            pipe.close()
        server.wait()
    assert b"configuration error" in error and b"deny example 'cksum -b b' was allowed" in error


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


def test_a_line_longer_than_max_body_bytes_is_dropped_as_it_arrives_and_answered(tmp_path: Path) -> None:
    """A client (or a broken one) that never ends its line cannot make the server hold it: past
    `[server] max_body_bytes` the line is dropped as it arrives, answered -32600 at its end, and the next line
    is served. Before, 1 GiB without a newline grew the server to 1.1 GB."""
    limit = 64 * 1024
    env = {"PATH": "/usr/bin:/bin", "REPO_SANDBOX_SERVER_MAX_BODY_BYTES": str(limit)}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    server = subprocess.Popen(
        [REPO_SANDBOX, "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1
        before = _rss_kib(server.pid)
        piece = b"x" * (1 << 20)
        server.stdin.write(b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"t": "')
        for _ in range(64):
            server.stdin.write(piece)
        server.stdin.flush()
        grown = _rss_kib(server.pid) - before
        fits = request(4, t="y" * (limit - 100))
        server.stdin.write(b'"}}\n' + request(3) + b"\n" + fits + b"\n")
        server.stdin.flush()
        answers = [json.loads(server.stdout.readline()) for _ in range(3)]
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()
    assert answers[0] == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": f"Invalid Request: a message longer than {limit} bytes ([server] max_body_bytes).",
        },
    }
    assert answers[1] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert answers[2] == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert grown < 16 * 1024, f"the server grew by {grown} KiB while a 64 MiB line arrived"
