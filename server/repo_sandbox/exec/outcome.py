"""The result of one execute_bash run, shaped to fit the output limit; a run past its deadline is an error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from repo_sandbox.errors import TimeoutExceededError
from repo_sandbox.exec.capture import fit_text
from repo_sandbox.exec.chain import Step
from repo_sandbox.exec.runner import RunResult
from repo_sandbox.exec.sandbox import Backend
from repo_sandbox.meter import OutputMeter

DRAIN_LIMIT: Final = 64 * 1024 * 1024
"""Bytes of stdout read before an endless producer is stopped (only head and tail are kept)."""
LANDLOCK_NOTE: Final = (
    "[repo-sandbox: under the landlock sandbox a directory that holds protected entries (at any depth) cannot "
    "be listed, and protected files cannot be read; list or search a subdirectory, or use search_files]\n"
)
"""Added to stderr when a program met a Landlock refusal, so the agent knows it is not a transient error."""
MIN_KEPT_CHARS: Final = 256
"""A stream is not cut below this many characters to fit the output limit (the fixed fields' reserve covers it)."""
TIMEOUT_STDOUT_CHARS: Final = 8192
TIMEOUT_STDERR_CHARS: Final = 4096
"""The partial output a `timeout` error carries (head and tail; its `*_truncated` details say when cut)."""


@dataclass(frozen=True, slots=True)
class ExecOutcome:
    exit_code: int
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: float
    sandbox: str
    steps: tuple[Step, ...] | None = None
    """Each element's exit status, for a command list (None for a single pipeline)."""


def stdout_cap(max_output_bytes: int) -> int:
    return max_output_bytes * 5 // 8


def stderr_cap(max_output_bytes: int) -> int:
    return max_output_bytes // 8


def shape_outcome(
    result: RunResult, backend: Backend, timeout_s: float, max_output_bytes: int, steps: Sequence[Step] | None = None
) -> ExecOutcome:
    """The result as the tool returns it, within `max_output_bytes` once serialised.

    Raises:
        TimeoutExceededError: the run hit its deadline; details carry the partial output and `duration_ms`.
    """
    stdout, stderr = result.stdout.text(), result.stderr.text()
    stdout_cut = result.stdout.truncated or result.flooded
    stderr_cut = result.stderr.truncated
    budget = max_output_bytes - 2 * OutputMeter.RESERVE
    for step in steps or ():
        budget -= OutputMeter.cost(step.command) + 40  # the step's keys and exit code
    while OutputMeter.cost(stdout) + OutputMeter.cost(stderr) > budget and len(stdout) > MIN_KEPT_CHARS:
        stdout, _ = fit_text(stdout, len(stdout) * 3 // 4)
        stdout_cut = True
    # stderr's byte cap can still be too much once JSON-escaped (control characters cost 6 bytes each)
    while OutputMeter.cost(stdout) + OutputMeter.cost(stderr) > budget and len(stderr) > MIN_KEPT_CHARS:
        stderr, _ = fit_text(stderr, len(stderr) * 3 // 4)
        stderr_cut = True
    if result.flooded:
        stderr += f"\n[repo-sandbox: the command wrote more than {DRAIN_LIMIT} bytes and was stopped]\n"
    if backend is Backend.LANDLOCK and "Permission denied" in stderr:
        stderr += LANDLOCK_NOTE
    if result.timed_out:
        stdout, stdout_fitted = fit_text(stdout, TIMEOUT_STDOUT_CHARS)
        stderr, stderr_fitted = fit_text(stderr, TIMEOUT_STDERR_CHARS)
        raise TimeoutExceededError(
            f"The command did not finish within {timeout_s:g} s and was killed.",
            hint="Pass a larger timeout (up to the server's maximum) or narrow the command.",
            timeout_s=timeout_s,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=stdout_cut or stdout_fitted,
            stderr_truncated=stderr_cut or stderr_fitted,
            duration_ms=round(result.duration_ms, 1),
            sandbox=backend.os_layer,
        )
    return ExecOutcome(
        exit_code=result.exit_code,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=stdout_cut,
        stderr_truncated=stderr_cut,
        duration_ms=round(result.duration_ms, 1),
        sandbox=backend.os_layer,
        steps=tuple(steps) if steps is not None else None,
    )
