"""Serve over stdio: stdout carries only protocol messages; logs go to stderr.

The SDK's `stdio_server` reads and writes through worker threads (`anyio.wrap_file`): a readline, a write
and a flush per exchange, each a thread hop (~a third of read_file's server time). Here the event loop
reads and writes the pipes itself, with the same contract:
- framing: one JSON-RPC message per line, UTF-8 (undecodable input bytes become U+FFFD); a line that is
  not a valid message is answered with a JSON-RPC error (`framing.read_message`; the SDK drops it), and so is
  one longer than `[server] max_body_bytes`, dropped as it arrives (the SDK holds any line whole);
- the stream claim: while serving, fd 0 reads the null device and fd 1 writes to stderr, so children and
  stray prints never touch the wire; the wire is served from private close-on-exec duplicates, and fd 0/1
  and their blocking mode are restored on exit.
Descriptors that cannot be polled (a regular file: `repo-sandbox < requests.jsonl`) use the SDK's transport.

SIGTERM drains as the network transports do (`transports.drain`): new requests are refused, in-flight calls
get `[server] shutdown_grace_s` to finish and are then cancelled (their callers get a JSON-RPC error), the
last answers are written, and the server exits with status 0.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from repo_sandbox.roots import RootPolicy
from repo_sandbox.transports.drain import Drain
from repo_sandbox.transports.framing import BadFrame, read_message, too_large
from repo_sandbox.wiring import sdk_adapter
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

READ_CHUNK = 1 << 16
FLUSH_TIMEOUT_S = 1.0
"""On shutdown, how long the last answers get to reach the client."""

logger = logging.getLogger("repo_sandbox")

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


class StopServing(Exception):
    """Raised by `after_handshake` to end the server: `message` goes to stderr, `code` is the exit status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def serve_stdio(
    workspace: Workspace, *, roots: RootPolicy | None = None, after_handshake: Callable[[], None] | None = None
) -> int:
    """Serve until stdin closes; returns the exit status.

    `after_handshake` runs in a daemon thread once the first answer (to `initialize`) is written, so that
    start-up work the handshake does not need does not delay it; it may raise `StopServing`. `roots`: how the
    client's MCP roots count (`assembly.build_server`).
    """
    server = build_server(workspace, roots=roots)
    drain = Drain()
    server.middleware.insert(0, drain)
    lowlevel = sdk_adapter.lowlevel_server(server)  # what MCPServer.run_stdio_async runs
    stopped: list[StopServing] = []
    answers = Answers()

    async def drain_on_sigterm(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                cancelled = await drain.drain(workspace.settings.server.shutdown_grace_s)
                await answers.flush(FLUSH_TIMEOUT_S)
                logger.info("shutdown: in-flight calls drained (%d cancelled)", cancelled)
                scope.cancel()
                return

    async def serve() -> None:
        token = anyio.lowlevel.current_token()
        with anyio.CancelScope() as scope:

            def work() -> None:
                try:
                    if after_handshake is not None:
                        after_handshake()
                except StopServing as stop:
                    stopped.append(stop)
                    with contextlib.suppress(RuntimeError):  # the server has already ended
                        anyio.from_thread.run_sync(scope.cancel, token=token)
                except Exception:
                    logger.exception("start-up work after the handshake failed")

            def answered() -> None:
                threading.Thread(target=work, name="repo-sandbox-after-handshake", daemon=True).start()

            async with (
                stdio_streams(answered, answers, workspace.settings.server.max_body_bytes) as (
                    read_stream,
                    write_stream,
                ),
                anyio.create_task_group() as signals,
            ):
                if threading.current_thread() is threading.main_thread():  # only it can receive signals
                    signals.start_soon(drain_on_sigterm, scope)
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
                signals.cancel_scope.cancel()

    anyio.run(serve)
    if stopped:
        print(stopped[0].message, file=sys.stderr)
        return stopped[0].code
    return 0


class Answers:
    """The requests read but not yet answered on the wire, so that a shutdown lets the last answers out."""

    def __init__(self) -> None:
        self.pending: set[types.RequestId] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def asked(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self.pending.add(message.id)
            if self._idle.is_set():
                self._idle = anyio.Event()

    def answered(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.pending.discard(message.id)
            if not self.pending:
                self._idle.set()

    async def flush(self, timeout_s: float) -> None:
        with anyio.move_on_after(timeout_s):
            await self._idle.wait()


def stdio_streams(
    after_first_message: Callable[[], None] = lambda: None,
    answers: Answers | None = None,
    max_line_bytes: int = 1 << 20,
) -> AbstractAsyncContextManager[Any]:
    """The message streams over this process's stdin/stdout: the event loop's own when both can be polled.
    `after_first_message` is called once the first message is written (at once with the SDK's transport);
    `answers` tracks the requests not yet answered and `max_line_bytes` bounds a line (the event loop's
    streams only)."""
    if _pollable(sys.stdin, 0, select.EPOLLIN) and _pollable(sys.stdout, 1, select.EPOLLOUT):
        return _loop_stdio(after_first_message, answers or Answers(), max_line_bytes)
    after_first_message()
    return stdio_server()


def _pollable(stream: Any, fd: int, events: int) -> bool:
    try:
        if stream.buffer.fileno() != fd:
            return False
        with select.epoll() as probe:
            probe.register(fd, events)
    except (AttributeError, OSError, ValueError):
        return False
    return True


class _Claim:
    """fd 0 or 1 diverted (to the null device, or to stderr) while the wire is served from a private duplicate."""

    def __init__(self, fd: int, diversion: int) -> None:
        self.fd = fd
        self.wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        self.was_blocking = os.get_blocking(self.wire)
        try:
            os.dup2(diversion, fd)
        finally:
            os.close(diversion)
        os.set_blocking(self.wire, False)  # the flag belongs to the open file: restored before the fd is

    def release(self) -> None:
        os.set_blocking(self.wire, self.was_blocking)
        os.dup2(self.wire, self.fd)
        os.close(self.wire)


@asynccontextmanager
async def _loop_stdio(
    after_first_message: Callable[[], None], answers: Answers, max_line_bytes: int
) -> AsyncIterator[Streams]:
    stdin = _Claim(0, os.open(os.devnull, os.O_RDONLY))
    try:
        stdout = _Claim(1, os.dup(2))
    except BaseException:
        stdin.release()
        raise
    try:
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

        replies = write_stream.clone()

        async def read_messages() -> None:
            async with read_writer, replies:
                async for line in _lines(stdin.wire, max_line_bytes):
                    message = (
                        too_large(max_line_bytes) if line is None else read_message(line.decode("utf-8", "replace"))
                    )
                    if isinstance(message, BadFrame):
                        if message.reply is not None:
                            await replies.send(SessionMessage(message.reply))
                        continue
                    answers.asked(message)
                    await read_writer.send(SessionMessage(message))

        async def write_messages() -> None:
            first = True
            async with write_reader:
                async for session_message in write_reader:
                    text = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await _write_all(stdout.wire, (text + "\n").encode("utf-8"))
                    answers.answered(session_message.message)
                    if first:
                        first = False
                        after_first_message()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_messages)
            tasks.start_soon(write_messages)
            yield read_stream, write_stream
    finally:
        stdout.release()
        stdin.release()


async def _lines(fd: int, max_bytes: int) -> AsyncIterator[bytes | None]:
    """The lines read from a non-blocking fd (each with its newline; the last one may lack it), and None for
    each line longer than `max_bytes`, which is dropped as it arrives: memory stays within a line and a read."""
    pending = bytearray()
    dropping = False
    while True:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        if not chunk:
            break
        searched = len(pending)
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", searched)) >= 0:
            yield None if dropping or end - start > max_bytes else bytes(pending[start : end + 1])
            dropping = False
            start = searched = end + 1
        del pending[:start]
        if len(pending) > max_bytes:
            dropping = True
            pending.clear()
    if dropping or len(pending) > max_bytes:
        yield None
    elif pending:
        yield bytes(pending)


async def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await anyio.wait_writable(fd)
