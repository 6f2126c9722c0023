"""The OS sandbox around each pipeline stage, chosen once by a probe.

Backends, in the order `auto` tries them (each probe runs the real jail shape on `true`):
- `bwrap`: bubblewrap, deny by default. Only /usr (and the /bin, /lib* links), a few /etc files, a fresh
  /dev and /proc, a private tmpfs /tmp (also $HOME), and the repository read-only at `/workspace` (not its
  host path; the host name is `sandbox`) without the names of denied entries (`exec.mounts`: the
  directories holding them are rebuilt, each entry bound from a descriptor opened beneath the root) and with
  special files masked by an empty file; all namespaces unshared (no network unless `exec.network`), new pid
  namespace,
  `--die-with-parent`, `--new-session`, no capabilities. When the stage's first process exits, the pid
  namespace dies and the kernel kills everything left in it, daemons included.
- `bwrap-noproc`: the same without /proc, for containers that refuse to mount it ("Mount too revealing").
- `landlock`: the stand-alone `_launcher.py`: Landlock (repository entries read-only, directories holding
  denied entries unlistable (`exec.mounts`), system read/exec, one
  private temp dir writable, TCP denied, signals and abstract sockets scoped) plus a seccomp filter (no
  socket(), io_uring, ptrace, namespaces, mounts). It is a subreaper that kills all descendants at the end.
- `none`: the launcher with no confinement (rlimits, process cleanup and the command policy still apply).
  Used only when configured or when nothing else works, which is logged as a warning and reported in every
  result's `sandbox` field and in the status.
rlimits (CPU, address space, file size, open files, processes, no core files) apply in every backend:
bwrap runs the program through `prlimit`, the launcher sets them itself.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Final

from repo_sandbox.errors import SandboxFailedError
from repo_sandbox.exec.binds import SANDBOX_HOSTNAME, SANDBOX_ROOT, Bind, PlanArg, flatten, open_binds, to_sandbox
from repo_sandbox.exec.mounts import GIT_MOUNT, LandlockRule, bwrap_view_args, landlock_view_rules
from repo_sandbox.exec.view import RepoView
from repo_sandbox.policy.programs import SYSTEM_PATH

logger = logging.getLogger("repo_sandbox")

ETC_FILES: Final = ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group")
"""The /etc entries a sandbox shows: the loader cache, the time zone, and the user and group names `ls -l`
prints (names only; /etc/shadow is never shown). Each bind costs about 0.3 ms, so the list is short."""
GIT_ETC_FILES: Final = ETC_FILES[:2]
"""What git stages get of /etc under bwrap: git's read-only commands never look up user or group names."""
_SYSTEM_LINKS: Final = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
LAUNCHER: Final = str(Path(__file__).with_name("_launcher.py"))


class Backend(StrEnum):
    BWRAP = "bwrap"
    BWRAP_NOPROC = "bwrap-noproc"
    LANDLOCK = "landlock"
    NONE = "none"

    @property
    def os_layer(self) -> str:
        """The OS isolation as results name it (bwrap, landlock or none): bwrap without /proc is bwrap."""
        return str(Backend.BWRAP) if self is Backend.BWRAP_NOPROC else str(self)


@dataclass(frozen=True, slots=True)
class Limits:
    cpu_s: int
    memory_bytes: int
    file_size_bytes: int
    open_files: int
    processes: int


@dataclass(frozen=True, slots=True)
class SandboxInfo:
    """The probe's result: which backend runs commands, and what was tried."""

    backend: Backend | None
    """None when the configured backend does not work: execute_bash then refuses with sandbox_failed."""
    requested: str
    tried: dict[str, str] = field(default_factory=dict[str, str])
    """Backend -> 'ok' or why it failed."""

    @property
    def degraded(self) -> bool:
        return self.backend in (None, Backend.NONE)

    def describe(self) -> dict[str, object]:
        return {
            "backend": str(self.backend) if self.backend else None,
            "requested": self.requested,
            "degraded": self.degraded,
            "tried": dict(self.tried),
        }


@dataclass(slots=True)
class StageCommand:
    """How to start one stage: argv, environment and the host directory to start in.

    `binds`: (index in argv, bind) of every `--ro-bind-fd` whose descriptor `opened` fills in beneath `root`.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: str
    root: str = ""
    binds: tuple[tuple[int, Bind], ...] = ()

    def opened(self) -> tuple[list[str], list[int]]:
        """The argv to start, and the descriptors to pass to it (the caller closes them once it started).

        Raises: SandboxFailedError when the repository cannot be opened.
        """
        return open_binds(self.root, self.argv, self.binds)


@cache
def _system_mounts(etc_files: tuple[str, ...] = ETC_FILES) -> tuple[str, ...]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_LINKS:
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in etc_files:
        args += ["--ro-bind-try", path, path]
    return tuple(args)


_installed: dict[str, str] = {}


def installed(binary: str) -> str | None:
    """The path of `binary` on SYSTEM_PATH, or None; found paths are remembered for the process's life."""
    path = _installed.get(binary)
    if path is None:
        path = shutil.which(binary, path=SYSTEM_PATH)
        if path is not None:
            _installed[binary] = path
    return path


_masks_lock = threading.Lock()


def mask_sources(tmp: str) -> tuple[str, str]:
    """An empty read-only file and directory (in the call's private temp dir) to mount over hidden entries.

    The first calls on a fresh server share one directory: the lock makes one of them create both entries
    and the others wait for them (checking for the directory, made last, means both exist)."""
    empty_file, empty_dir = os.path.join(tmp, "masked-file"), os.path.join(tmp, "masked-dir")
    with _masks_lock:
        if not os.path.isdir(empty_dir):
            os.close(os.open(empty_file, os.O_CREAT | os.O_RDONLY | os.O_CLOEXEC, 0o444))
            os.chmod(empty_file, 0o444)
            os.mkdir(empty_dir, 0o555)
    return empty_file, empty_dir


def bwrap_prefix(
    view: RepoView, cwd: str, tmp: str, *, with_proc: bool, network: bool, git_dir: str | None = None
) -> tuple[list[str], tuple[tuple[int, Bind], ...]]:
    """The bwrap argv up to `--`, and its binds (see `StageCommand.binds`). `cwd` is a host path in the
    repository; `git_dir`: the host `.git` directory to show at `GIT_MOUNT` (git stages)."""
    plan: list[PlanArg] = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    plan += ["--hostname", SANDBOX_HOSTNAME]
    if network:
        plan.append("--share-net")
    plan += _system_mounts(ETC_FILES if git_dir is None else GIT_ETC_FILES)
    if with_proc:
        plan += ["--proc", "/proc"]
    plan += ["--dev", "/dev", "--tmpfs", "/tmp", *bwrap_view_args(view, *mask_sources(tmp))]
    if git_dir is not None:
        if git_dir == os.path.join(view.root, ".git"):
            plan.append(Bind(".git", "dir", GIT_MOUNT))
        else:
            plan += ["--ro-bind", git_dir, GIT_MOUNT]
    plan += ["--chdir", to_sandbox(cwd, view.root), "--"]
    return flatten(plan)


def prlimit_prefix(limits: Limits) -> list[str]:
    return [
        "prlimit",
        f"--cpu={limits.cpu_s}",
        f"--as={limits.memory_bytes}",
        f"--fsize={limits.file_size_bytes}",
        f"--nofile={limits.open_files}",
        f"--nproc={limits.processes}",
        "--core=0",
        "--",
    ]


def landlock_rules(view: RepoView, tmp: str) -> list[LandlockRule]:
    """(path, access, follow symlinks) for the launcher: the system, the call's temp dir, the repository."""
    rules: list[LandlockRule] = [("/usr", "rx", True)]
    rules += [(f"/{name}", "rx", True) for name in _SYSTEM_LINKS if os.path.exists(f"/{name}")]
    rules += [(path, "r", True) for path in ETC_FILES]
    rules += [("/dev/null", "dev", True), ("/dev/zero", "r", True), ("/dev/urandom", "r", True), (tmp, "rw", True)]
    return [*rules, *landlock_view_rules(view)]


def launcher_command(
    backend: Backend, binary: str, args: Sequence[str], view: RepoView, tmp: str, limits: Limits, network: bool
) -> list[str] | None:
    """argv of the launcher for one stage, or None when `binary` is not installed."""
    path = installed(binary)
    if path is None:
        return None

    spec = {
        "parent": os.getpid(),
        "path": path,
        "argv": [binary, *args],
        "landlock": backend is Backend.LANDLOCK,
        "seccomp": backend is Backend.LANDLOCK,
        "network": network,
        "rules": landlock_rules(view, tmp) if backend is Backend.LANDLOCK else [],
        "rlimits": {
            "CPU": limits.cpu_s,
            "AS": limits.memory_bytes,
            "FSIZE": limits.file_size_bytes,
            "NOFILE": limits.open_files,
            "NPROC": limits.processes,
            "CORE": 0,
        },
    }
    return [sys.executable, "-I", "-S", LAUNCHER, json.dumps(spec)]


def stage_command(
    backend: Backend,
    binary: str,
    args: Sequence[str],
    *,
    view: RepoView,
    cwd: str,
    env: Mapping[str, str],
    tmp: str,
    limits: Limits,
    network: bool,
    git: bool = False,
) -> StageCommand | None:
    """The command that runs one stage under `backend`; None when the program is not installed.

    `git`: a git stage, whose `env["GIT_DIR"]` (when set) must be visible: bwrap shows it at `GIT_MOUNT`
    (and points GIT_DIR there), the launcher backends grant it in place.
    """
    if installed(binary) is None:
        return None
    git_dir = env.get("GIT_DIR") if git else None
    if backend in (Backend.BWRAP, Backend.BWRAP_NOPROC):
        prefix, binds = bwrap_prefix(
            view, cwd, tmp, with_proc=backend is Backend.BWRAP, network=network, git_dir=git_dir
        )
        argv = [*prefix, *prlimit_prefix(limits), binary, *args]
        inside = {name: to_sandbox(value, view.root) for name, value in env.items()}
        if git_dir is not None:
            inside["GIT_DIR"] = GIT_MOUNT
        if "GIT_CEILING_DIRECTORIES" in inside:
            inside["GIT_CEILING_DIRECTORIES"] = os.path.dirname(SANDBOX_ROOT)
        return StageCommand(argv, {**inside, "HOME": "/tmp", "TMPDIR": "/tmp"}, cwd, view.root, binds)
    if git_dir is not None:
        view = view.for_git()
    argv = launcher_command(backend, binary, args, view, tmp, limits, network)
    if argv is None:
        return None
    return StageCommand(argv, {**env, "HOME": tmp, "TMPDIR": tmp}, cwd)


def _probe_one(backend: Backend, network: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="repo-sandbox-probe-") as tmp:
        repo = os.path.join(tmp, "repo")
        os.mkdir(repo)
        view = RepoView(repo)
        limits = Limits(5, 512 * 1024 * 1024, 1024 * 1024, 64, 64)
        if backend in (Backend.BWRAP, Backend.BWRAP_NOPROC) and shutil.which("bwrap", path=SYSTEM_PATH) is None:
            return "bwrap is not installed (apt-get install bubblewrap)"
        command = stage_command(
            backend, "true", [], view=view, cwd=repo, env={"PATH": SYSTEM_PATH}, tmp=tmp, limits=limits,
            network=network,
        )  # fmt: skip
        if command is None:
            return "true(1) is not installed"
        try:
            argv, fds = command.opened()
            try:
                result = subprocess.run(
                    argv, env=command.env, cwd=command.cwd, stdin=subprocess.DEVNULL, pass_fds=fds,
                    capture_output=True, timeout=10, check=False,
                )  # fmt: skip
            finally:
                for fd in fds:
                    os.close(fd)
        except (OSError, subprocess.TimeoutExpired, SandboxFailedError) as exc:
            return f"{type(exc).__name__}: {exc}"
        if result.returncode != 0:
            return (result.stderr.decode("utf-8", "replace").strip() or f"exit {result.returncode}")[:300]
        return "ok"


def probe(requested: str, *, network: bool = False) -> SandboxInfo:
    """Find the backend to use. `auto` tries bwrap, bwrap-noproc, landlock, then falls back to none (loudly)."""
    tried: dict[str, str] = {}
    candidates = (
        [Backend.BWRAP, Backend.BWRAP_NOPROC, Backend.LANDLOCK] if requested == "auto" else [Backend(requested)]
    )
    for backend in candidates:
        if backend is Backend.NONE:
            tried[backend] = "ok"
            logger.warning('execute_bash runs WITHOUT an OS sandbox (exec.sandbox = "none")')
            return SandboxInfo(backend, requested, tried)
        tried[backend] = _probe_one(backend, network)
        if tried[backend] == "ok":
            logger.info("execute_bash sandbox: %s", backend)
            return SandboxInfo(backend, requested, tried)
    if requested == "auto":
        logger.warning("execute_bash runs WITHOUT an OS sandbox: no backend works here (%s)", tried)
        tried[Backend.NONE] = "ok (fallback)"
        return SandboxInfo(Backend.NONE, requested, tried)
    logger.error("execute_bash sandbox %r does not work here: %s", requested, tried)
    return SandboxInfo(None, requested, tried)
