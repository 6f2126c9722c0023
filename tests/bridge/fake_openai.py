"""A real HTTP server on 127.0.0.1 that speaks the chat-completions protocol and replays scripted turns.

Every request is recorded (path, headers, decoded JSON body) so tests can assert what the bridge sent.
A reply is a status with a JSON body and headers, or a dropped connection; the server answers 500 with
"script exhausted" when it runs out, so an unexpected extra request fails the test visibly.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from typing import Any, cast

CHAT_PATH = "/v1/chat/completions"
_ids = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None
    """A JSON value, or bytes sent as they are."""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    disconnect: bool = False
    """Close the connection without answering (a transport error for the client)."""
    delay_s: float = 0.0
    """Wait this long before answering (for timeout tests)."""


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: Any


def completion(message: dict[str, Any], finish_reason: str, usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def tool_calls(*calls: tuple[str, str, Any], content: str | None = None) -> Reply:
    """A turn calling tools: `(id, name, arguments)`; arguments as JSON text (sent as is) or a value to encode."""
    encoded = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
        }
        for call_id, name, args in calls
    ]
    return Reply(body=completion({"role": "assistant", "content": content, "tool_calls": encoded}, "tool_calls"))


def answer(text: str) -> Reply:
    return Reply(body=completion({"role": "assistant", "content": text}, "stop"))


def error(status: int, message: str = "scripted failure", headers: Mapping[str, str] | None = None) -> Reply:
    body = {"error": {"message": message, "type": "scripted", "param": None, "code": None}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


class _Server(ThreadingMixIn, HTTPServer):
    daemon_threads = False  # server_close() joins the handler threads: no socket outlives the test
    block_on_close = True
    script: ScriptedChatServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # a keep-alive connection the client forgot cannot hold the server open forever

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            body = raw
        script = cast(_Server, self.server).script
        reply = script.record(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.disconnect:
            self.close_connection = True
            return
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode("utf-8")
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class ScriptedChatServer:
    """Replays `replies` in order to POSTs on /v1/chat/completions; 404 elsewhere."""

    def __init__(self, replies: Iterable[Reply] = ()) -> None:
        self._replies: deque[Reply] = deque(replies)
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.script = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def bodies(self) -> list[Any]:
        return [request.body for request in self.requests]

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def record(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if request.path != CHAT_PATH:
                return error(404, f"no route {request.path}")
            if not self._replies:
                return error(500, "script exhausted")
            return self._replies.popleft()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@contextmanager
def scripted_chat_server(*replies: Reply) -> Iterator[ScriptedChatServer]:
    server = ScriptedChatServer(replies)
    server.start()
    try:
        yield server
    finally:
        server.stop()
