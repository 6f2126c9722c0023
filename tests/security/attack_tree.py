"""A repository laid out for attacks on the jail, next to the secrets an attack would want to reach.

Layout under a temporary directory `base`:
- `base/repo` (the root): ordinary files, deny-listed files (content carries `DENIED_MARKER`), and every kind
  of hostile entry: symlinks out (relative and absolute, files and dirs), chains, loops, dangling links, links
  to denied files, /proc magic links, links to devices, a FIFO, a socket, a device node, a hard link out.
- `base/outside` and `base/repo-evil` (the sibling whose name shares the root's prefix): secrets whose
  content carries `OUTSIDE_MARKER`.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio

from repo_sandbox.config.loader import load_settings
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.runtime.pipeline import CallOutcome
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

OUTSIDE_MARKER: Final = "OUTSIDE-SECRET-7f3a9c"
"""In every file outside the root: must never appear in any result."""
DENIED_MARKER: Final = "DENIED-SECRET-41be07"
"""In every deny-listed file inside the root: must never appear in any result."""
INSIDE_MARKER: Final = "INSIDE-OK-5d21"
"""In the ordinary in-root files the allowed rows read."""

EXTRA_DENY: Final = ["/config/prod.yaml", "résumé.txt", "private/"]
"""Operator rules on top of the defaults: an anchored file, an NFC name, a directory."""

CALL_TIMEOUT_S: Final = 10.0
"""No call may take this long; a FIFO that blocked an open would hit it."""

BACKENDS: Final = ("openat2", "walk", "openat2-noproc", "walk-noproc")
"""Ways the jail can resolve: openat2 or the O_NOFOLLOW walk, each with and without /proc to cross-check."""

DENIED_NAMES: Final = (
    *(".env", ".ENV", "id_rsa", ".git", "prod.yaml", "server.pem", "private", "résumé"),
    *("server.pem.", ".git.", ".netrc ", "x.\uff2b\uff25\uff39", "config.json"),
)
"""Names of denied entries: none may appear in a listing or search result."""


@dataclass(frozen=True, slots=True)
class AttackTree:
    base: Path
    root: Path
    outside: Path
    sibling: Path
    has_device_node: bool


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _symlinks(root: Path, outside: Path) -> dict[str, str]:
    up = "../" * (len(root.parts) + 2)  # more than enough '..' to reach '/' from anywhere in the tree
    return {
        # out of the root, files and dirs, relative and absolute
        "link_out_file_rel": "../outside/secret.txt",
        "link_out_file_abs": str(outside / "secret.txt"),
        "link_out_dir_rel": "../outside",
        "link_out_dir_abs": str(outside),
        "link_sibling": "../repo-evil",
        "src/link_up_out": "../../outside/secret.txt",
        # inside the root: allowed (relative), refused (absolute, even when it names an in-root path)
        "link_in_file": "src/main.py",
        "link_in_dir": "src",
        "src/link_up_in": "../README.md",
        "link_abs_in": str(root / "src" / "main.py"),
        # chains
        "chain_out_1": "chain_out_2",
        "chain_out_2": "src/chain_out_3",
        "src/chain_out_3": "../../outside/secret.txt",
        "chain_in_1": "chain_in_2",
        "chain_in_2": "link_in_dir/main.py",
        # dangling and looping
        "dangling": "missing.txt",
        "dangling_out": "../nowhere/at/all",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "self_loop": "self_loop",
        "loop_dir": "loop_dir/x",
        # in-root links to deny-listed files and directories
        "link_env": ".env",
        "link_git": ".git",
        "link_git_config": ".git/config",
        "link_cfg": "config",
        "link_private": "private",
        "link_resume_nfd": unicodedata.normalize("NFD", "résumé.txt"),
        # /proc magic links
        "proc_root": "/proc/self/root",
        "proc_cwd": "/proc/self/cwd",
        "proc_fd0": "/proc/self/fd/0",
        "proc_environ": "/proc/self/environ",
        "proc_root_rel": up + "proc/self/root",
        # devices
        "dev_zero": "/dev/zero",
        "dev_tty": "/dev/tty",
        "dev_zero_rel": up + "dev/zero",
        # a symlink whose target uses '..' through a file
        "through_file": "README.md/../.env",
        # a symlink to the root's parent: everything below it is outside, even the way back in
        "link_parent": "..",
    }


def build(base: Path) -> AttackTree:
    root = base / "repo"
    outside = base / "outside"
    sibling = base / "repo-evil"
    _write(outside / "secret.txt", f"{OUTSIDE_MARKER} outside file\n")
    _write(outside / "dir" / "inner.txt", f"{OUTSIDE_MARKER} outside dir\n")
    _write(sibling / "secret.txt", f"{OUTSIDE_MARKER} sibling\n")
    _write(root / "README.md", f"# Demo {INSIDE_MARKER}\n")
    _write(root / "src" / "main.py", f"print('{INSIDE_MARKER}')\n")
    _write(root / "src" / "pkg" / "deep.py", f"DEEP = '{INSIDE_MARKER}'\n")
    _write(root / "%2e%2e" / "decoy.txt", f"{INSIDE_MARKER} a directory literally named %2e%2e\n")
    _write(root / "config" / "dev.yaml", f"{INSIDE_MARKER}: dev\n")
    for denied in (".env", ".ENV", "id_rsa", "server.pem", ".git/config", "config/prod.yaml", "private/notes.txt"):
        _write(root / denied, f"{DENIED_MARKER} {denied}\n")
    _write(root / unicodedata.normalize("NFD", "résumé.txt"), f"{DENIED_MARKER} decomposed name\n")
    # denied names in the spellings Windows, SMB or a formKC file system take for the same name
    for variant in ("server.pem.", ".netrc ", ".git./config", "x.\uff2b\uff25\uff39", "sub/.docker/config.json"):
        _write(root / variant, f"{DENIED_MARKER} {variant}\n")
    for name, target in _symlinks(root, outside).items():
        os.symlink(target, root / name)
    os.mkfifo(root / "fifo")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(root / "sock"))  # the socket file stays after close
    os.link(outside / "secret.txt", root / "hardlink_out.txt")
    try:
        os.mknod(root / "devnode", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # a /dev/zero twin inside the root
        has_device_node = True
    except PermissionError:
        has_device_node = False
    return AttackTree(base=base, root=root, outside=outside, sibling=sibling, has_device_node=has_device_node)


class OpenAt2MissingError(RuntimeError):
    """The kernel (or a seccomp filter) does not offer openat2."""


@contextmanager
def workspace_for(tree: AttackTree, backend: str, **workspace_keys: object) -> Iterator[Workspace]:
    """A workspace over the tree whose jail uses the given resolution backend."""
    overrides = {("workspace", "root"): str(tree.root), ("workspace", "extra_deny"): EXTRA_DENY}
    overrides.update({("workspace", key): value for key, value in workspace_keys.items()})
    ws = Workspace(load_settings(None, env={}, overrides=overrides))
    try:
        if backend.startswith("openat2") and not ws.jail.uses_openat2:
            raise OpenAt2MissingError("openat2 is not available on this kernel")
        ws.jail.uses_openat2 = backend.startswith("openat2")
        if backend.endswith("noproc"):
            ws.jail.uses_proc = False
        yield ws
    finally:
        ws.close()


def leaked_secrets(serialised: str) -> list[str]:
    """Markers of outside or denied content found in a serialised result."""
    return [marker for marker in (OUTSIDE_MARKER, DENIED_MARKER) if marker in serialised]


def call_bounded(ws: Workspace, tool: str, arguments: dict[str, Any]) -> CallOutcome:
    """Run one call through the real pipeline in a separate thread, failing if it does not finish in time.

    A worker thread stuck in a blocking open() cannot be cancelled from the event loop, so the bound is
    enforced by joining a daemon thread instead.
    """
    result: list[CallOutcome] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(anyio.run(build_pipeline(ws, TOOLS).call, tool, arguments))
        except BaseException as exc:  # noqa: BLE001  # re-raised in the test thread below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(CALL_TIMEOUT_S)
    assert not thread.is_alive(), f"{tool}({arguments!r}) blocked for more than {CALL_TIMEOUT_S} s"
    if errors:
        raise errors[0]
    return result[0]
