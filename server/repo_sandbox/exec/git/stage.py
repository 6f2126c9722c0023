"""The git special cases of execute_bash behind one hook: `exec.service` asks `GitStage` for every stage it
builds (a no-op for a stage that is not git) and, after a run with fewer exclusions, whether to run again.

For a git stage: the repository is checked (`fs.gitenv`), under Landlock its config includes too; the
objects the command names are resolved first (`exec.git.objects`); the deny-list exclusions are narrowed to
those that can match a name git could show (`exec.git.excludes`; never without an OS sandbox, where the
working tree's denied entries are in plain sight); `--follow` runs only with no exclusion left, and blame
only when it cannot name a protected file (`exec.git.blame`). A run with narrowed exclusions carries a
`PruneCheck`: when the repository moved while git ran, the service runs it again with every exclusion.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from repo_sandbox.errors import ArgumentNotAllowedError, SandboxFailedError
from repo_sandbox.exec.git.blame import RenameSources
from repo_sandbox.exec.git.excludes import ExcludePruner, PruneCheck
from repo_sandbox.exec.git.objects import verify_objects
from repo_sandbox.exec.sandbox import Backend
from repo_sandbox.exec.view import RepoView, ViewCache
from repo_sandbox.fs.gitenv import GitHardening
from repo_sandbox.policy.deny import DenyList
from repo_sandbox.policy.programs import SYSTEM_PATH, RenameFollowing, StagePlan


class GitStage:
    """What execute_bash keeps for git between calls (hardening, exclusions, blame's answers) and the hook
    the service calls for each stage."""

    def __init__(self, root: str, deny: DenyList, rule: object) -> None:
        self.root = root
        self.deny = deny
        self.hardening = GitHardening(root, shutil.which("git", path=SYSTEM_PATH))
        self.excludes = ExcludePruner.for_rule(rule, self.hardening)
        self.blame = RenameSources(self.hardening.git_binary, self.hardening.host_env, self.excludes.tail)

    def close(self) -> None:
        self.excludes.close()

    def env(self, plan: StagePlan) -> Mapping[str, str]:
        """The hardening environment of a stage that sees the .git directory; nothing for any other."""
        return self.hardening.env() if plan.needs_git_dir else {}

    def prepare(
        self, plan: StagePlan, env: Mapping[str, str], view: RepoView, cwd: str, backend: Backend,
        *, prune: bool, check: PruneCheck | None,
    ) -> tuple[tuple[str, ...], PruneCheck | None]:  # fmt: skip
        """A stage's arguments and the build's check so far (`check`, then this stage's). Blocking.

        `prune`: give the stage only the exclusions that can match something (see the module docstring).

        Raises: SandboxFailedError (repository, config include, objects), ArgumentNotAllowedError (--follow,
        blame).
        """
        args = plan.args
        if plan.needs_git_dir:
            self.hardening.check_repository()
            if backend is Backend.LANDLOCK:
                self._check_config_includes()
            verify_objects(plan.objects, self.hardening.git_binary, self.hardening.host_env(), cwd)
            if prune and backend is not Backend.NONE and "GIT_DIR" in env:
                args, pruned = self.excludes.prune(args, view, single=plan.single_pathspec)
                check = check or pruned
        if plan.single_pathspec and self.excludes.exclusions_left(plan.args, args):
            raise ArgumentNotAllowedError(
                "git --follow takes exactly one pathspec, and this repository needs the deny-list's "
                "exclusions on every git command that prints files.",
                hint="Run git log without --follow (with --find-renames to see renames).",
                program="git", option="--follow", rule="git: --follow",
            )  # fmt: skip
        if plan.follows_renames is not None:  # judged even when an earlier stage already carries a check
            self._check_ignore_revs_files()
            blamed = self._blame_check(plan.follows_renames, view, cwd, prune=prune)
            check = check or blamed
        return args, check

    def unchanged(self, check: PruneCheck, views: ViewCache) -> bool:
        """False when the repository moved since `check`: run again with every exclusion. Blocking."""
        return self.excludes.unchanged(check, views)

    def _check_config_includes(self) -> None:
        """Under Landlock, git fails on a config include it may not read ('Permission denied'), with the path in
        its message: refuse first, with no path. (bwrap does not mount such a file: git skips it.)

        Raises: SandboxFailedError.
        """
        for path in self.hardening.includes():
            if not os.path.lexists(path):
                continue  # git skips an include that does not exist
            if self._outside_or_protected(os.path.realpath(path)):
                raise SandboxFailedError(
                    "The repository's git configuration includes a file the sandbox cannot read (outside the "
                    "repository or protected); git commands are unavailable.",
                    hint="Use the read-only tools, or ask the operator to remove the include from .git/config.",
                )

    def _outside_or_protected(self, path: str) -> bool:
        """Whether a host path (normalised) is outside the root or one the deny-list protects."""
        root = self.root
        return os.path.commonpath([path, root]) != root or self.deny.is_denied(os.path.relpath(path, root))

    def _check_ignore_revs_files(self) -> None:
        """git blame reads every `blame.ignoreRevsFile` the configuration names and quits on a line that is not
        an object name, printing it. Inside the sandbox an absolute path can reach `.git` (and, unsandboxed,
        anything): only a relative one (git reads it from the top of the working tree) that stays inside the
        repository, through no protected name, is allowed.

        Raises: ArgumentNotAllowedError.
        """
        for value in self.hardening.ignore_revs_files():
            if not value:
                continue  # an empty value only clears the list
            path = os.path.normpath(os.path.join(self.root, value))
            if value.startswith(("/", "~")) or any(map(self._outside_or_protected, (path, os.path.realpath(path)))):
                raise ArgumentNotAllowedError(
                    "git blame would read the file the repository's configuration names in blame.ignoreRevsFile, "
                    "which is outside the repository or protected.",
                    hint="Read the history with git log -p -- FILE, or ask the operator to point "
                    "blame.ignoreRevsFile at a file of the repository.",
                    program="git", option="blame.ignoreRevsFile", rule="git: blame",
                )  # fmt: skip

    def _blame_check(self, walk: RenameFollowing, view: RepoView, cwd: str, *, prune: bool) -> PruneCheck:
        """The check to make after a git blame run (the repository must not move meanwhile).

        Raises: ArgumentNotAllowedError when blame could name a protected file as a line's source.
        """
        clean = self.excludes.history_clean(view) if prune else None
        if clean is not None:
            return clean
        generation = self.excludes.names.generation()
        if prune and not walk.any_path:
            non_ascii = self.excludes.non_ascii_exclusions(view)
            if not self.blame.may_name_protected(generation, walk.revisions, cwd, non_ascii):
                return PruneCheck(generation, view)
        raise ArgumentNotAllowedError(
            "git blame follows renames"
            + (" (and with -C copies, with --reverse renames forward)" if walk.any_path else "")
            + " through history and names the file each line came from; here that could be a file the deny-list "
            "protects.",
            hint="Read the history with git log -p -- FILE (it shows no protected file), or blame without -C.",
            program="git", option="blame", rule="git: blame",
        )  # fmt: skip
