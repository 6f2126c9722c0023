"""Command lists: `&&`, `||` and `;` between pipelines with bash's exit-status semantics, and `cd DIR`.

Every element is judged before anything runs, each pipeline on its own exactly as a single command is, in
the directory the `cd`s before it lead to when each of them runs (`ExecService.judge`). The server then runs
the elements one after another, each pipeline in its own sandbox through the runner, and decides from the
last exit status whether the next one runs (`&&`: after 0, `||`: after non-zero, `;`: always; a skipped
element leaves the status as it was, which is bash's left-to-right reading of `a && b || c`). When a `cd`
was skipped, a later element runs in another directory than the one it was judged for: it is judged again
there before it runs, so every check is bound to the directory the program really gets.

`cd` is done by the server, never by a program: lexically as bash's default `cd -L` does (`cd link/..` is
back where it started), then resolved through the jail. Out of the root (`cd ..` past it, an absolute path
elsewhere, a symlink leading out) or into a denied directory is refused like a bad `cwd`; a missing
directory or a file is bash's failure: exit status 1 and its message on stderr.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from repo_sandbox.errors import NotADirError, NotFoundError, SandboxError
from repo_sandbox.exec.capture import HeadTailBuffer
from repo_sandbox.exec.runner import RunResult
from repo_sandbox.fs.jail import Jail
from repo_sandbox.policy.commands import Evaluation
from repo_sandbox.policy.decision import allow, strictest
from repo_sandbox.shell.parse import ChangeDir, CommandList, Element, Pipeline

CD_FIELD: Final = "cd"


@dataclass(frozen=True, slots=True)
class Place:
    """A working directory: `logical` as bash's $PWD names it, `real` with symlinks resolved (both relative
    to the root)."""

    logical: str
    real: str


@dataclass(frozen=True, slots=True)
class CdOutcome:
    """A judged `cd`: where it leads, or (`place` None) bash's message for a missing directory or a file."""

    place: Place | None
    message: str = ""


Judgement = Evaluation | CdOutcome


@dataclass(frozen=True, slots=True)
class Step:
    """One element of a list as it ran: its text and exit status (None: skipped by `&&` / `||`)."""

    command: str
    exit_code: int | None


def runs_after(operator: str, status: int) -> bool:
    return operator == ";" or (status == 0) == (operator == "&&")


def change_dir(jail: Jail, place: Place, target: str) -> CdOutcome:
    """Raises: SandboxError when the directory is outside the root or denied (a refusal, as for `cwd`)."""
    logical = jail.normalize(posixpath.join(place.logical, target), field=CD_FIELD)
    try:
        fd, real = jail.open_dir(logical, field=CD_FIELD)
    except NotFoundError:
        return CdOutcome(None, f"cd: {target}: No such file or directory\n")
    except NotADirError:
        return CdOutcome(None, f"cd: {target}: Not a directory\n")
    os.close(fd)
    return CdOutcome(Place(logical, real))


def name_element(error: SandboxError, commands: CommandList, index: int) -> SandboxError:
    """Add to a refusal which element of a list it concerns (nothing for a single pipeline)."""
    if len(commands.elements) > 1:
        error.details.setdefault("element", commands.elements[index].source)
        error.details.setdefault("element_index", index)
    return error


Judged = dict[tuple[int, Place], Judgement]
"""Judgements by (element index, directory it runs in)."""


def judge_all(
    commands: CommandList, start: Place, jail: Jail, judge: Callable[[Pipeline, Place], Evaluation]
) -> Judged:
    """Every element judged in the directory it gets when every `cd` before it runs.

    Raises: the first refusal, naming its element."""
    judged: Judged = {}
    place = start
    for index, element in enumerate(commands.elements):
        try:
            judgement = judge_one(element, place, jail, judge)
        except SandboxError as refusal:
            raise name_element(refusal, commands, index) from None
        judged[index, place] = judgement
        if isinstance(judgement, CdOutcome) and judgement.place is not None:
            place = judgement.place
    return judged


def judge_one(element: Element, place: Place, jail: Jail, judge: Callable[[Pipeline, Place], Evaluation]) -> Judgement:
    if isinstance(element, ChangeDir):
        return change_dir(jail, place, element.target)
    return judge(element, place)


def absorb(into: HeadTailBuffer, other: HeadTailBuffer) -> None:
    """Append what `other` kept to `into`, counting what `other` dropped as dropped (after its head)."""
    head, tail = other.parts()
    into.feed(head)
    into.skip(other.total - len(head) - len(tail))
    into.feed(tail)


async def run_list(
    commands: CommandList,
    start: Place,
    judged: Judged,
    *,
    rejudge: Callable[[int, Place], Awaitable[Judgement]],
    run: Callable[[int, Evaluation, Place], Awaitable[RunResult]],
    stdout_cap: int,
    stderr_cap: int,
) -> tuple[RunResult, list[Step]]:
    """Run the elements with bash's list semantics; the result joins their output in order.

    Stops after an element that timed out or flooded stdout (the rest are reported as skipped).
    """
    out, err = HeadTailBuffer(stdout_cap), HeadTailBuffer(stderr_cap)
    steps: list[Step] = []
    status, place = 0, start
    total = RunResult(0, out, err, 0.0)
    for index, element in enumerate(commands.elements):
        stopped = total.timed_out or total.flooded
        if stopped or (index and not runs_after(commands.operators[index - 1], status)):
            steps.append(Step(element.source, None))
            continue
        judgement = judged.get((index, place)) or await rejudge(index, place)
        if isinstance(judgement, CdOutcome):
            status = 0 if judgement.place is not None else 1
            err.feed(judgement.message.encode())
            place = judgement.place or place
        else:
            result = await run(index, judgement, place)
            absorb(out, result.stdout)
            absorb(err, result.stderr)
            status = result.exit_code
            total.duration_ms += result.duration_ms
            total.timed_out, total.flooded = result.timed_out, result.flooded
            total.pids.extend(result.pids)
        steps.append(Step(element.source, status))
    total.exit_code = status
    return total, steps


def merged(evaluations: Sequence[Evaluation]) -> Evaluation:
    """One evaluation for approval: the strictest verdict and every plan (a list of `cd`s alone is allowed)."""
    if not evaluations:
        return Evaluation(allow("cd"), ())
    return Evaluation(strictest([e.verdict for e in evaluations]), tuple(plan for e in evaluations for plan in e.plans))
