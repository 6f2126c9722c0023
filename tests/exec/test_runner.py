"""The pipeline runner on its own: pipes, the shared stderr, exit codes, descriptors, deadlines, and the
fallback for kernels without pidfd (a worker thread waits for each stage)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import anyio
import pytest

from repo_sandbox.exec.reaping import tagged
from repo_sandbox.exec.runner import TAG_VARIABLE, RunResult, run_pipeline
from repo_sandbox.exec.sandbox import StageCommand

pytestmark = pytest.mark.anyio


def stage(*argv: str, tag: str = "") -> StageCommand:
    return StageCommand(list(argv), {"PATH": "/usr/bin:/bin", TAG_VARIABLE: tag}, "/")


async def run(*stages: StageCommand, timeout_s: float = 10, tag: str | None = None) -> RunResult:
    with anyio.fail_after(timeout_s + 10):
        return await run_pipeline(
            stages, timeout_s=timeout_s, stdout_cap=4096, stderr_cap=4096, drain_limit=1 << 20, tag=tag
        )


@pytest.fixture(params=["pidfd", "thread"])
def wait_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "thread":

        def no_pidfd(pid: int) -> int:
            raise OSError(38, "pidfd_open is not available")

        monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    return request.param


async def test_stages_are_piped_and_the_last_exit_code_counts(wait_mode: str) -> None:
    result = await run(stage("printf", "b\\na\\n"), stage("sort"), stage("head", "-n", "1"))
    assert (result.exit_code, result.stdout.text(), result.stderr.text()) == (0, "a\n", "")
    assert (await run(stage("true"), stage("false"))).exit_code == 1


async def test_every_stage_writes_to_one_stderr(wait_mode: str) -> None:
    result = await run(stage("cat", "/missing-one"), stage("cat", "-", "/missing-two"))
    assert "/missing-one" in result.stderr.text() and "/missing-two" in result.stderr.text()
    assert result.exit_code == 1


async def test_no_descriptor_of_the_server_reaches_a_stage(tmp_path: Path) -> None:
    held = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    os.set_inheritable(held, True)  # even one made inheritable on purpose
    try:
        result = await run(stage("ls", "/proc/self/fd"))
    finally:
        os.close(held)
    assert result.stdout.text().split() == ["0", "1", "2", "3"]  # 3: ls's own handle on the directory


@pytest.mark.slow
async def test_a_deadline_kills_the_stages_and_what_they_started(wait_mode: str) -> None:
    tag = uuid.uuid4().hex
    script = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\ntime.sleep(60)"
    result = await run(stage("python3", "-c", script, tag=tag), stage("cat"), timeout_s=0.5, tag=tag)
    assert result.timed_out
    assert tagged(tag) == []


async def test_an_endless_producer_is_stopped_and_marked(wait_mode: str) -> None:
    result = await run(stage("yes"))
    assert result.flooded and result.stdout.truncated
    assert result.stdout.total > 1 << 20


async def test_a_program_that_cannot_start_raises_and_leaves_nothing(wait_mode: str) -> None:
    with pytest.raises(OSError):
        await run(stage("sleep", "30"), stage("/nonexistent/program"))
