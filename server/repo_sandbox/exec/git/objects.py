"""Resolve the objects a git stage names before it runs, and refuse the stage when one is of a forbidden type.

`policy.git.revs` says what each name must be. git itself answers, through `git cat-file --batch-check` run
on the host in the stage's working directory under the hardened environment of `fs.gitenv` (it reads the
object database only; no filters, no hooks), so names resolve exactly as the stage will resolve them. A name
git cannot resolve passes (the stage then reads it as a path or fails by itself) unless it `must_exist`.
Anything unexpected (git missing, failing, too slow, an answer that does not line up) refuses the stage.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Final

from repo_sandbox.errors import ArgumentNotAllowedError, SandboxFailedError
from repo_sandbox.policy.programs import ObjectCheck

TIMEOUT_S: Final = 10.0
_UNRESOLVED: Final = (b"missing", b"ambiguous")


class BatchCheckFailed(Exception):
    """git could not answer (missing, failing, too slow, answers that do not line up)."""

    def __init__(self, reason: str, *, not_a_repository: bool = False) -> None:
        super().__init__(reason)
        self.not_a_repository = not_a_repository


def batch_check(git_binary: str, env: Mapping[str, str], cwd: str, names: Sequence[str], fmt: str) -> list[bytes]:
    """git's answer line for each name, in order (`<name> missing` or `<name> ambiguous` when it names no one
    object). Names go to git as file-system bytes: a glob may have expanded to a non-UTF-8 name.

    Raises: BatchCheckFailed.
    """
    try:
        result = subprocess.run(
            [git_binary, "cat-file", f"--batch-check={fmt}"],
            input=b"".join(os.fsencode(name) + b"\n" for name in names), env=dict(env), cwd=cwd,
            capture_output=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BatchCheckFailed(type(exc).__name__) from None
    if result.returncode != 0:
        raise BatchCheckFailed(
            f"exit code {result.returncode}",
            not_a_repository=result.stderr.startswith(b"fatal: not a git repository"),
        )
    answers = result.stdout.splitlines()
    if len(answers) != len(names):
        raise BatchCheckFailed("the answers do not line up with the names")
    return answers


def resolved(name: str, answer: bytes) -> bool:
    """Whether `answer` (from `batch_check`) says `name` names an object."""
    return answer not in (os.fsencode(name) + b" " + word for word in _UNRESOLVED)


def verify_objects(checks: Sequence[ObjectCheck], git_binary: str | None, env: Mapping[str, str], cwd: str) -> None:
    """Raises: ArgumentNotAllowedError for a name of a forbidden type; SandboxFailedError when git cannot tell."""
    if not checks:
        return
    if git_binary is None:
        raise SandboxFailedError("git is not installed on this server.")
    try:
        answers = batch_check(git_binary, env, cwd, [check.name for check in checks], "%(objecttype)")
    except BatchCheckFailed as failure:
        if failure.not_a_repository:
            return  # nothing to name objects in: the stage fails with git's own message
        raise SandboxFailedError("git could not resolve the objects this command names.", reason=str(failure)) from None
    for check, answer in zip(checks, answers, strict=True):
        if not resolved(check.name, answer):
            if check.must_exist:
                raise ArgumentNotAllowedError(
                    f"git: '{check.name}' names no object here.",
                    hint="Name files as REV:path with an existing revision and path.",
                    program="git", option=check.name, rule="git: objects",
                )  # fmt: skip
            continue
        kind = answer.decode("ascii", "replace")
        if kind not in check.allowed:
            raise _forbidden(check, kind)


def _forbidden(check: ObjectCheck, kind: str) -> ArgumentNotAllowedError:
    shown = check.name.removesuffix("^{}")
    if kind in ("blob", "tree") and ":" not in shown:
        reason = f"'{shown}' names a {kind} without a path, which bypasses the deny-list."
        hint = "Name files as REV:path (e.g. HEAD:src/app.py); list files with git ls-files or search_files."
    elif kind == "tree":
        reason = f"'{shown}' is a directory: its listing would show names the deny-list hides."
        hint = "List files with git ls-files, search_files, or git log --name-only."
    else:
        reason = f"'{shown}' names a {kind}, which this git command may not be given."
        hint = "Name commits, or files as REV:path."
    return ArgumentNotAllowedError(f"git: {reason}", hint=hint, program="git", option=shown, rule="git: objects")
