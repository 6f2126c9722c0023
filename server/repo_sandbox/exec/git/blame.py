"""Whether `git blame` could name a protected file as the source of a line.

blame follows a file's renames back through history and prints the path each line came from; pathspecs do
not limit it. Without `-C`, a line's source is the blamed path or, where a commit renamed the file, the
rename's source, which git pairs only among the paths *deleted* by that commit (against any of its parents,
or against HEAD for what is staged). So blame can name a protected path only if some commit it may walk, or
the index, deletes one. This module asks git exactly that, once per state of the repository:
`git log -m --diff-filter=D` over every ref, the reflog and the blamed revisions, limited to the deny-list as
positive pathspecs (with the non-ASCII names it refuses, or every non-ASCII path while those are unknown:
`exec.git.excludes`), and `git diff --cached --diff-filter=D` for the index. Anything git cannot answer counts as
"could" (fail closed). With `-C` a line may come from any file of a commit: `exec.service` then allows blame
only where git's records hold no protected name at all.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from repo_sandbox.exec.git.objects import BatchCheckFailed, batch_check, resolved
from repo_sandbox.exec.git.scan import GitReader
from repo_sandbox.fs.gitrun import ScanError
from repo_sandbox.policy.git.rule import NON_ASCII_EXCLUSIONS

MAX_REMEMBERED = 32


def _positive(exclusion: str) -> str:
    return exclusion.replace(":(exclude,", ":(", 1)


class RenameSources:
    """Answers, per repository generation (`exec.git.names`), whether blame could meet a protected path."""

    def __init__(self, git_binary: str | None, env: Callable[[], dict[str, str]], exclusions: tuple[str, ...]):
        self.git_binary = git_binary
        self.env = env
        self.positive = tuple(_positive(spec) for spec in exclusions if spec not in NON_ASCII_EXCLUSIONS)
        self._lock = threading.Lock()
        self._answers: dict[tuple[int, tuple[str, ...], tuple[str, ...]], bool] = {}

    def may_name_protected(
        self, generation: int, revisions: tuple[str, ...], cwd: str, non_ascii: tuple[str, ...]
    ) -> bool:
        """True when a commit blame may walk from `revisions` (or any ref), or the index, deletes a path the
        deny-list protects (`non_ascii`: the exclusions of the protected non-ASCII names), or when git cannot
        tell."""
        key = (generation, revisions, non_ascii)
        with self._lock:
            known = self._answers.get(key)
        if known is not None:
            return known
        answer = self._ask(revisions, cwd, (*self.positive, *map(_positive, non_ascii)))
        with self._lock:
            if len(self._answers) >= MAX_REMEMBERED:
                self._answers.clear()
            self._answers[key] = answer
        return answer

    def _ask(self, revisions: tuple[str, ...], cwd: str, positive: tuple[str, ...]) -> bool:
        if self.git_binary is None or not self.positive:
            return True
        reader = GitReader(self.git_binary, self.env, cwd)
        seen = bytearray()

        def collect(chunk: bytes) -> bool:
            seen.extend(chunk)
            return False  # one deleted protected path is enough

        log = ["log", "--all", "--reflog", "-m", "--no-renames", "--diff-filter=D", "--format=", "--name-only"]
        try:
            commits = self._commits(revisions, cwd)
            reader.run([*log, *commits, "--", *positive], collect)
            if not seen:
                reader.run(
                    ["diff", "--cached", "--no-renames", "--diff-filter=D", "--name-only", "--", *positive], collect
                )
        except ScanError:
            return True
        return bool(seen.strip())

    def _commits(self, candidates: tuple[str, ...], cwd: str) -> list[str]:
        """The candidates that name commits (blame's operands mix a revision and the file)."""
        names = [f"{name}^{{commit}}" for name in candidates if "\n" not in name]
        if not names:
            return []
        assert self.git_binary is not None
        try:
            answers = batch_check(self.git_binary, self.env(), cwd, names, "%(objectname)")
        except BatchCheckFailed as failure:
            raise ScanError(f"git cat-file: {failure}") from None
        return [os.fsdecode(answer) for name, answer in zip(names, answers, strict=True) if resolved(name, answer)]
