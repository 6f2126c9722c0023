"""The environment half of git hardening: command-line-scope config overrides that neutralise `.git/config`.

A repository's own `.git/config` runs programs from read-only commands (verified: `core.fsmonitor` on
`git status`, `diff.external` and textconv on `git diff`/`log -p`/`show`, filter drivers on `git diff`,
`log.showSignature` + `gpg.program` on `git log`). `GIT_CONFIG_COUNT/KEY_n/VALUE_n` have command-line
precedence over every config file, so each of those keys is overridden here, and every filter or diff
driver the configuration names is pointed at `cat`. Driver names are listed with `git config
--get-regexp`, which reads configuration and runs nothing; the list is cached per `.git/config` state.
`GIT_DIR`/`GIT_WORK_TREE` pin the repository (overriding `core.worktree`), and
`GIT_CEILING_DIRECTORIES` stops discovery from leaving the root.

Ref-level indirection: `GIT_NO_REPLACE_OBJECTS` ignores replace refs (`git replace <README blob> <.env blob>`
made `git show HEAD:README.md` print the protected file) and `GIT_GRAFT_FILE=/dev/null` ignores
`info/grafts` (which can give a commit any parent, one holding a protected blob under an innocent name).
A repository whose `objects/info/alternates` borrows objects from another store (a protected directory of
the repository, or anywhere outside it) is refused (`check_repository`): git would read that store directly.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from typing import Final

from repo_sandbox.errors import ArgumentNotAllowedError, SandboxFailedError

OVERRIDES: Final[tuple[tuple[str, str], ...]] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.sshCommand", "false"),
    ("core.askPass", "false"),
    ("core.alternateRefsCommand", ""),
    ("core.untrackedCache", "false"),
    ("core.packedGitLimit", "256m"),
    ("core.packedGitWindowSize", "32m"),
    ("sequence.editor", "false"),
    ("diff.external", ""),
    ("protocol.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("credential.helper", ""),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("mailmap.file", ""),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("diff.submodule", "short"),
    ("diff.orderFile", "/dev/null"),
    ("mailmap.blob", ""),
    ("uploadpack.packObjectsHook", ""),
    ("advice.graftFileDeprecated", "false"),
)
"""Overrides for keys that make read-only git commands run programs or reach outside the repository.
`diff.submodule` keeps git from starting git inside a submodule for a diff, where the submodule's own
configuration (which these overrides reach, but whose driver names they do not know) would apply (the policy
forces `--ignore-submodules=dirty` for the rest); `diff.orderFile` is `-O`, refused; `mailmap.blob` would read any blob (`HEAD:.env`) as a mailmap and print its names in `git shortlog`."""

MAX_DRIVERS: Final = 256
"""A configuration naming more filter/diff drivers than this is refused (the overrides go in the env)."""

BASE_ENV: Final[dict[str, str]] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "false",
    "GIT_SSH_COMMAND": "false",
    "GIT_ASKPASS": "false",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_ADVICE": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": "/dev/null",
}

HOST_ENV: Final = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8"}


def _driver_overrides(names: list[str]) -> list[tuple[str, str]]:
    overrides: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for key in names:
        section, _, rest = key.partition(".")
        driver, _, _ = rest.rpartition(".")
        if not driver or (section, driver) in seen:
            continue
        seen.add((section, driver))
        if section == "filter":
            overrides += [(f"filter.{driver}.clean", "cat"), (f"filter.{driver}.smudge", "cat"),
                          (f"filter.{driver}.process", ""), (f"filter.{driver}.required", "false")]  # fmt: skip
        elif section == "diff":
            overrides += [(f"diff.{driver}.textconv", "cat"), (f"diff.{driver}.command", "false"),
                          (f"diff.{driver}.cachetextconv", "false")]  # fmt: skip
    if len(seen) > MAX_DRIVERS:
        raise SandboxFailedError(
            f"The repository's git configuration names more than {MAX_DRIVERS} filter or diff drivers.",
            hint="git commands are unavailable for this repository; use the read-only tools.",
        )
    return overrides


MAX_ALTERNATES_BYTES: Final = 65536
_ALTERNATES_DEPTH: Final = 5
"""git follows alternates of alternates this deep."""


def _borrows_from_inside(objects: str, root: str, depth: int = 0) -> bool:
    """Whether `objects/info/alternates` (or one it names, as git follows them) names a store inside `root`.
    Anything that cannot be read or understood counts as inside (fail closed)."""
    path = os.path.join(objects, "info", "alternates")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ALTERNATES_BYTES + 1)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if len(data) > MAX_ALTERNATES_BYTES or depth >= _ALTERNATES_DEPTH:
        return bool(data.strip())
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        if entry.startswith('"'):
            return True  # a C-quoted path: not worth decoding, fail closed
        store = os.path.realpath(os.path.join(objects, entry))
        if os.path.commonpath([store, root]) == root or _borrows_from_inside(store, root, depth + 1):
            return True
    return False


def is_real_dir(path: str) -> bool:
    """A directory that is not a symlink (a symlinked .git could point anywhere)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


class GitHardening:
    """Builds the hardened environment for git stages of one repository root."""

    def __init__(self, root: str, git_binary: str | None) -> None:
        self.root = root.rstrip("/") or "/"
        self.git_binary = git_binary
        self._lock = threading.Lock()
        self._cache_key: tuple[int, int, int] | None = None
        self._drivers: list[tuple[str, str]] = []
        self._includes: list[str] = []
        self._ignore_revs: list[str] = []
        self._env_cache: tuple[object, dict[str, str]] | None = None

    def repo_env(self) -> dict[str, str]:
        """Where the repository is; pins GIT_DIR/GIT_WORK_TREE when `<root>/.git` is a directory."""
        env = {"GIT_CEILING_DIRECTORIES": os.path.dirname(self.root) or "/"}
        if is_real_dir(os.path.join(self.root, ".git")):
            env["GIT_DIR"] = os.path.join(self.root, ".git")
            env["GIT_WORK_TREE"] = self.root
        return env

    def check_repository(self) -> None:
        """Refuse git in a repository that borrows objects from a store inside the root (a protected directory
        could hold one); a store outside is unreadable under an OS sandbox.

        Raises: ArgumentNotAllowedError.
        """
        git_dir = os.path.join(self.root, ".git")
        if is_real_dir(git_dir) and _borrows_from_inside(os.path.join(git_dir, "objects"), os.path.realpath(self.root)):
            raise ArgumentNotAllowedError(
                "git: this repository borrows objects from a store inside it (objects/info/alternates), "
                "which git would read past the deny-list.",
                hint="git commands are unavailable for this repository; use the read-only tools.",
                program="git", option="objects/info/alternates", rule="git: alternates",
            )  # fmt: skip

    def _config_key(self) -> tuple[int, int, int] | None:
        try:
            info = os.stat(os.path.join(self.root, ".git", "config"))
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def drivers(self) -> list[tuple[str, str]]:
        """Overrides for every filter/diff driver the repository config names (cached per config state)."""
        return self._read_config()[0]

    def includes(self) -> list[str]:
        """The files the repository config includes (`include.path`, every `includeIf.*.path` whatever its
        condition), as absolute host paths (cached per config state)."""
        return self._read_config()[1]

    def ignore_revs_files(self) -> list[str]:
        """The files `git blame` reads object names from (`blame.ignoreRevsFile`, whose value no override can
        take back), as written in the configuration (cached per config state)."""
        return self._read_config()[2]

    def _read_config(self) -> tuple[list[tuple[str, str]], list[str], list[str]]:
        key = self._config_key()
        with self._lock:
            if key is None:
                return [], [], []
            if key != self._cache_key:
                self._drivers = _driver_overrides(self._config_values(r"^(filter|diff)\.", names=True))
                self._includes = self._include_paths()
                words = self._config_values(r"^blame\.ignorerevsfile$", names=False)
                self._ignore_revs = [entry.partition("\n")[2] for entry in words[1::2]]
                self._cache_key = key
            return self._drivers, self._includes, self._ignore_revs

    def _include_paths(self) -> list[str]:
        words = self._config_values(r"^include(if\..+)?\.path$", names=False)
        paths: list[str] = []
        for origin, entry in zip(words[::2], words[1::2], strict=False):
            value = entry.partition("\n")[2]
            origin_dir = os.path.dirname(os.path.join(self.root, origin.removeprefix("file:")))
            expanded = HOST_ENV["HOME"] + value[1:] if value.startswith("~/") else value
            paths.append(os.path.normpath(os.path.join(origin_dir, expanded)))
        return paths

    def host_env(self) -> dict[str, str]:
        """The environment for git runs on the host that only read (`exec.git.names`): fully hardened."""
        return {**HOST_ENV, **self.env()}

    def _config_values(self, pattern: str, *, names: bool) -> list[str]:
        """`git config --get-regexp pattern`, NUL-separated: the names, or (origin, "name\\nvalue") pairs."""
        if self.git_binary is None:
            return []
        env = {**HOST_ENV, **BASE_ENV, **self.repo_env()}
        shape = ["--name-only"] if names else ["--show-origin"]
        try:
            result = subprocess.run(
                [self.git_binary, "config", "--null", *shape, "--get-regexp", pattern],
                env=env,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxFailedError(
                "Could not read the repository's git configuration to harden git.", reason=type(exc).__name__
            ) from None
        if result.returncode not in (0, 1):  # 1: no such keys
            raise SandboxFailedError(
                "The repository's git configuration could not be read; git commands are unavailable.",
                exit_code=result.returncode,
            )
        return [k for k in result.stdout.decode("utf-8", "replace").split("\0") if k]

    def env(self) -> dict[str, str]:
        """The full environment additions for one git stage (rebuilt when `.git` or its config changes)."""
        drivers = self.drivers()
        repo_env = self.repo_env()
        key = (tuple(drivers), tuple(repo_env.items()))
        cached = self._env_cache
        if cached is not None and cached[0] == key:
            return dict(cached[1])
        pairs = [*OVERRIDES, ("safe.directory", self.root), *drivers]
        env = {**BASE_ENV, **repo_env, "GIT_CONFIG_COUNT": str(len(pairs))}
        for index, (name, value) in enumerate(pairs):
            env[f"GIT_CONFIG_KEY_{index}"] = name
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        self._env_cache = (key, env)
        return dict(env)
