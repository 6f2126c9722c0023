"""Run a pipeline of already-sandboxed stage commands: no shell, bounded output, a wall clock, no leftovers.

- Each stage is its own process in its own session (start_new_session), stdin of the first is /dev/null,
  stage i's stdout is a pipe to stage i+1 (the parent closes its copies at once, so SIGPIPE works); every
  stage writes to one shared stderr pipe, as the stages of a shell pipeline share the terminal.
- Processes are started with `subprocess.Popen` (vfork + exec in C, every other descriptor closed), not
  asyncio's subprocess machinery: no transports, no child-watcher thread. The pipes are read with
  `anyio.wait_readable` + `os.read`, and each exit is awaited on a pidfd (Linux >= 5.3; elsewhere a worker
  thread waits). stdout of the last stage and the shared stderr are read incrementally into head+tail
  buffers. Past `drain_limit` bytes of stdout (an endless producer such as `yes`), the pipeline is stopped
  and the output marked truncated.
- On the deadline, on a stopped flood, and on cancellation by the client, every stage still running gets
  SIGTERM (the sandbox layer turns that into the death of all its processes: bwrap's pid namespace, the
  launcher's subreaper sweep), then SIGKILL after a grace period, then a sweep of anything left in the stages'
  sessions. A stage is only ever signalled while it is unreaped, so its process group id cannot have been
  recycled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio

from repo_sandbox.exec.capture import HeadTailBuffer
from repo_sandbox.exec.reaping import TAG_VARIABLE, children_of, session_members, sweep_tagged
from repo_sandbox.exec.sandbox import StageCommand
from repo_sandbox.shell.redirects import Stream

__all__ = ["TAG_VARIABLE", "RunResult", "run_pipeline"]

KILL_GRACE_S: Final = 0.5
"""Time between SIGTERM and SIGKILL when a pipeline is stopped."""
READ_CHUNK: Final = 65536


@dataclass(slots=True)
class RunResult:
    exit_code: int
    stdout: HeadTailBuffer
    stderr: HeadTailBuffer
    duration_ms: float
    timed_out: bool = False
    flooded: bool = False
    pids: list[int] = field(default_factory=list[int])
    """The stage processes (each the leader of its own session), for tests and audits."""


def _status(code: int | None) -> int:
    if code is None:
        return 137
    return 128 - code if code < 0 else code


async def _exited(process: subprocess.Popen[bytes]) -> None:
    """Wait until `process` has exited, and reap it."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:  # no pidfd here (old kernel, seccomp): a worker thread waits instead
        await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        return
    try:
        while process.poll() is None:
            await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


def _spawn(stage: StageCommand, stdin: int | None, stdout: int, stderr: int) -> subprocess.Popen[bytes]:
    """Start one stage; the sandbox's source descriptors (bwrap binds) are opened now and closed once it runs."""
    argv, fds = stage.opened()
    try:
        return subprocess.Popen(
            argv,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            cwd=stage.cwd,
            env=stage.env,
            close_fds=True,
            pass_fds=fds,
            start_new_session=True,
        )
    finally:
        for fd in fds:
            os.close(fd)


class _Pipeline:
    def __init__(self, stdout_cap: int, stderr_cap: int, drain_limit: int, tag: str | None) -> None:
        self.tag = tag
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stdout = HeadTailBuffer(stdout_cap)
        self.stderr = HeadTailBuffer(stderr_cap)
        self.drain_limit = drain_limit
        self.flooded = False
        self.stop = anyio.Event()
        self.readers: list[int] = []
        """Our read ends: the last stage's stdout, then the shared stderr (non-blocking)."""

    def start(self, stages: Sequence[StageCommand], streams: Sequence[tuple[Stream, Stream]]) -> None:
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        self.readers = [out_read, err_read]
        previous: int | None = None
        devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            for index, stage in enumerate(stages):
                last = index == len(stages) - 1
                read_end, write_end = (None, out_write) if last else os.pipe()
                targets = {"out": write_end, "err": err_write, "null": devnull}
                stdout, stderr = streams[index] if index < len(streams) else ("out", "err")
                try:
                    self.procs.append(_spawn(stage, previous, targets[stdout], targets[stderr]))
                finally:
                    if not last:
                        os.close(write_end)
                    if previous is not None:
                        os.close(previous)
                    previous = None
                previous = read_end
        finally:
            os.close(devnull)
            if previous is not None:
                os.close(previous)
            os.close(out_write)
            os.close(err_write)
            for fd in self.readers:
                os.set_blocking(fd, False)

    async def _drain(self, fd: int, buffer: HeadTailBuffer, limited: bool) -> None:
        while True:
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not data:
                return
            buffer.feed(data)
            if limited and buffer.total > self.drain_limit:
                self.flooded = True
                self.stop.set()
                return

    async def wait_all(self) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._drain, self.readers[0], self.stdout, True)
            group.start_soon(self._drain, self.readers[1], self.stderr, False)
            for process in self.procs:
                group.start_soon(_exited, process)

    def signal_running(self, number: int) -> None:
        for process in self.procs:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, number)

    async def _reap_all(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            for process in self.procs:
                await _exited(process)

    async def terminate(self) -> None:
        """Stop every stage and everything it started; bounded in time.

        A stage's direct child is killed first: for bwrap that is the pid namespace's init, whose death
        makes the kernel kill the whole namespace before bwrap itself exits (signalling only bwrap would
        return before the namespace is gone); for the launcher it is the program, after which the launcher
        sweeps every descendant.
        """
        for process in self.procs:
            if process.poll() is None:
                for child in children_of(process.pid):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(child, signal.SIGKILL)
        self.signal_running(signal.SIGTERM)
        await self._reap_all(KILL_GRACE_S)
        self.signal_running(signal.SIGKILL)
        await self._reap_all(5)
        sessions = {p.pid for p in self.procs}
        for pid in session_members(sessions):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self.tag is not None:
            await sweep_tagged(self.tag)

    async def close(self) -> None:
        """Read what is left up to EOF (bounded), then close our pipe ends."""
        with anyio.move_on_after(1):
            await self._drain(self.readers[0], self.stdout, False)
            await self._drain(self.readers[1], self.stderr, False)
        for fd in self.readers:
            os.close(fd)
        self.readers = []


async def run_pipeline(
    stages: Sequence[StageCommand],
    *,
    timeout_s: float,
    stdout_cap: int,
    stderr_cap: int,
    drain_limit: int,
    tag: str | None = None,
    streams: Sequence[tuple[Stream, Stream]] = (),
) -> RunResult:
    """Run `stages` as a pipeline; returns when all have exited (or were stopped). Cancellation kills them.

    `streams`: where each stage's stdout and stderr go (`shell.redirects`; "out" and "err" when not given):
    "null" is /dev/null, opened here, so a redirection never names a file to the sandbox.

    `tag`: the value of TAG_VARIABLE in the stages' environment; when the pipeline has to be stopped, any
    process still carrying it afterwards is killed too.

    Raises:
        OSError: a stage could not be started (the stages started before it are stopped first).
        SandboxFailedError: the sandbox's view of the repository could not be opened (the same).
    """
    started = time.perf_counter()
    pipeline = _Pipeline(stdout_cap, stderr_cap, drain_limit, tag)
    timed_out = False
    try:
        pipeline.start(stages, streams)
        with anyio.move_on_after(timeout_s) as deadline:
            async with anyio.create_task_group() as group:

                async def stop_on_flood() -> None:
                    await pipeline.stop.wait()
                    await pipeline.terminate()

                group.start_soon(stop_on_flood)
                await pipeline.wait_all()
                group.cancel_scope.cancel()
        timed_out = deadline.cancelled_caught
    finally:
        with anyio.CancelScope(shield=True):
            if any(p.poll() is None for p in pipeline.procs):
                await pipeline.terminate()
            if pipeline.readers:
                await pipeline.close()
    last = pipeline.procs[-1].returncode if pipeline.procs else None
    return RunResult(
        exit_code=_status(last),
        stdout=pipeline.stdout,
        stderr=pipeline.stderr,
        duration_ms=(time.perf_counter() - started) * 1000,
        timed_out=timed_out,
        flooded=pipeline.flooded,
        pids=[p.pid for p in pipeline.procs],
    )
