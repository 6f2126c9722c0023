"""Run a pipeline of already-sandboxed stage commands: no shell, bounded output, a wall clock, no leftovers.

- Each stage is its own process in its own session (start_new_session), stdin of the first is /dev/null,
  stage i's stdout is a pipe to stage i+1 (the parent closes its copies at once, so SIGPIPE works).
- stdout of the last stage and stderr of every stage are read incrementally into head+tail buffers. Past
  `drain_limit` bytes of stdout (an endless producer such as `yes`), the pipeline is stopped and the output
  marked truncated.
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
from anyio.abc import ByteReceiveStream, Process

from repo_sandbox.exec.capture import HeadTailBuffer
from repo_sandbox.exec.sandbox import StageCommand

TAG_VARIABLE: Final = "REPO_SANDBOX_CALL"
"""Environment variable carrying the call's id into every process it starts (to find them in /proc)."""
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


def session_members(sessions: set[int]) -> list[int]:
    """PIDs whose session or process group is one of `sessions` (a /proc scan)."""
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in sessions or int(fields[3]) in sessions:
            found.append(int(name))
    return found


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (all its threads)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(c) for c in handle.read().split()]
    return found


def tagged(tag: str) -> list[int]:
    """Live processes whose environment carries `tag` (the call's TAG_VARIABLE value)."""
    needle = f"{TAG_VARIABLE}={tag}\0".encode()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/environ", "rb") as handle:
                if needle in handle.read() + b"\0":
                    found.append(int(name))
    return found


async def sweep_tagged(tag: str) -> None:
    """SIGKILL every process of the call still alive until none is left (bounded)."""
    with anyio.move_on_after(2):
        while pids := tagged(tag):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.01)


class _Pipeline:
    def __init__(self, stdout_cap: int, stderr_cap: int, drain_limit: int, tag: str | None) -> None:
        self.tag = tag
        self.procs: list[Process] = []
        self.stdout = HeadTailBuffer(stdout_cap)
        self.stderr = HeadTailBuffer(stderr_cap)
        self.drain_limit = drain_limit
        self.flooded = False
        self.stop = anyio.Event()

    async def start(self, stages: Sequence[StageCommand]) -> None:
        previous: int | None = None
        try:
            for index, stage in enumerate(stages):
                last = index == len(stages) - 1
                read_end, write_end = (None, None) if last else os.pipe()
                try:
                    process = await anyio.open_process(
                        stage.argv,
                        stdin=previous if previous is not None else subprocess.DEVNULL,
                        stdout=subprocess.PIPE if last else write_end,
                        stderr=subprocess.PIPE,
                        cwd=stage.cwd,
                        env=stage.env,
                        start_new_session=True,
                    )
                finally:
                    if write_end is not None:
                        os.close(write_end)
                    if previous is not None:
                        os.close(previous)
                    previous = None
                self.procs.append(process)
                previous = read_end
        finally:
            if previous is not None:
                os.close(previous)

    async def _drain(self, stream: ByteReceiveStream | None, buffer: HeadTailBuffer, limited: bool) -> None:
        if stream is None:
            return
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            while True:
                buffer.feed(await stream.receive(READ_CHUNK))
                if limited and buffer.total > self.drain_limit:
                    self.flooded = True
                    self.stop.set()
                    return

    async def wait_all(self) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._drain, self.procs[-1].stdout, self.stdout, True)
            for process in self.procs:
                group.start_soon(self._drain, process.stderr, self.stderr, False)
        for process in self.procs:
            await process.wait()

    def signal_running(self, number: int) -> None:
        for process in self.procs:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, number)

    async def terminate(self) -> None:
        """Stop every stage and everything it started; bounded in time.

        A stage's direct child is killed first: for bwrap that is the pid namespace's init, whose death
        makes the kernel kill the whole namespace before bwrap itself exits (signalling only bwrap would
        return before the namespace is gone); for the launcher it is the program, after which the launcher
        sweeps every descendant.
        """
        for process in self.procs:
            if process.returncode is None:
                for child in children_of(process.pid):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(child, signal.SIGKILL)
        self.signal_running(signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE_S):
            for process in self.procs:
                await process.wait()
        self.signal_running(signal.SIGKILL)
        with anyio.move_on_after(5):
            for process in self.procs:
                await process.wait()
        sessions = {p.pid for p in self.procs}
        for pid in session_members(sessions):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self.tag is not None:
            await sweep_tagged(self.tag)

    async def close(self) -> None:
        """Read what is left up to EOF (so asyncio closes the pipe transports), then close everything."""
        for process in self.procs:
            for stream in (process.stdout, process.stderr):
                if stream is None:
                    continue
                with anyio.move_on_after(1), contextlib.suppress(Exception):
                    while await stream.receive(READ_CHUNK):
                        pass
            with anyio.move_on_after(5), contextlib.suppress(Exception):
                await process.aclose()


async def run_pipeline(
    stages: Sequence[StageCommand],
    *,
    timeout_s: float,
    stdout_cap: int,
    stderr_cap: int,
    drain_limit: int,
    tag: str | None = None,
) -> RunResult:
    """Run `stages` as a pipeline; returns when all have exited (or were stopped). Cancellation kills them.

    `tag`: the value of TAG_VARIABLE in the stages' environment; when the pipeline has to be stopped, any
    process still carrying it afterwards is killed too.

    Raises:
        OSError: a stage could not be started (the stages started before it are stopped first).
    """
    started = time.perf_counter()
    pipeline = _Pipeline(stdout_cap, stderr_cap, drain_limit, tag)
    timed_out = False
    try:
        await pipeline.start(stages)
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
            if any(p.returncode is None for p in pipeline.procs):
                await pipeline.terminate()
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
