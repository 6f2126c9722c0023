"""Which directory a session is served: the operator's root, narrowed by the client's MCP roots, or chosen by them.

- With an operator root (`--root`, `[workspace] root`, REPO_SANDBOX_WORKSPACE_ROOT) the client's roots may only
  narrow it: the first directory root inside it is served; a root outside it is ignored and reported in status.
- Without one, over stdio, the client's first directory root is served (the others are listed in status); a
  client without roots gets the current directory, which `cli` accepts only when it is a repository that is
  neither `/` nor the home directory (`cwd_refusal`), else the server stops with exit status 2.
- Over HTTP a remote client never chooses: without an operator root the accepted current directory is served,
  and client roots narrow it as they would an operator root.
A client root is never `/` or the home directory either. Roots are asked for (`roots/list`) on a session's
first call and again after `notifications/roots/list_changed`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

import anyio

from repo_sandbox.policy.denyrebase import CannotRebase, rebase
from repo_sandbox.workspace import Workspace

logger = logging.getLogger("repo_sandbox")

LIST_ROOTS_TIMEOUT_S: Final = 10.0
MAX_WORKSPACES: Final = 16
"""Client roots served at once (each has its own tree index and watches); more are ignored."""
MAX_SESSIONS: Final = 4096
"""Sessions whose client roots are remembered (bounded memory; connections are not told to us when they end)."""


def cwd_refusal(cwd: Path, home: Path) -> str | None:
    """Why the current directory may not be served without --root (None: it may)."""
    resolved = cwd.resolve()
    if resolved == Path("/"):
        return "is the file system root /"
    if resolved == home.resolve():
        return "is the home directory"
    if not (resolved / ".git").exists():
        return "is not a repository (it has no .git)"
    return None


def no_root_message(cwd: Path, reason: str) -> str:
    return (
        f"repo-sandbox: no repository to serve: the current directory {cwd} {reason}, and the client offered no "
        "directory root (MCP roots).\nPass --root /path/to/repo (or set [workspace] root in a --config file)."
    )


@dataclass(frozen=True, slots=True)
class RootPolicy:
    """How client roots count for this server."""

    source: str
    """Where the base root comes from: "--root/config" (the operator), "cwd", or "none"."""
    base_serves: bool = True
    """False: the base workspace is a placeholder (no root chosen yet); a session without a client root is refused."""
    client_chooses: bool = False
    """True: a client root anywhere is served (stdio without an operator root); False: it may only narrow."""
    refusal: str = ""
    """Why the server stops when `base_serves` is False and the client declares no roots (stdio)."""
    client_declared_roots: threading.Event = field(default_factory=threading.Event, compare=False)
    """Set when a client's `initialize` declares the roots capability."""


@dataclass(slots=True)
class SessionRoot:
    """What one session is served, and what its client offered."""

    workspace: Workspace | None
    served: str | None = None
    """The client root served (its URI), or None: the base."""
    others: list[str] = field(default_factory=list[str])
    ignored: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    error: str | None = None


def _path_of(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return unquote(parsed.path) or None


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


class SessionRoots:
    """The workspace each session is served; workspaces of client roots are built once per directory."""

    def __init__(self, base: Workspace, policy: RootPolicy, *, home: Path | None = None) -> None:
        self.base = base
        self.policy = policy
        self._home = str((home or Path.home()).resolve())
        self._sessions: dict[str, SessionRoot] = {}
        self._workspaces: dict[str, Workspace] = {}
        self._lock = threading.Lock()
        self._without_roots = self._choose([])
        base.on_close.append(self.close)

    def forget(self, session_id: str) -> None:
        """The client's roots changed: ask again on the session's next call."""
        self._sessions.pop(session_id, None)

    async def for_session(self, session_id: str, list_roots: Callable[[], Any] | None) -> SessionRoot:
        """The session's root, asking the client (`list_roots`: None when it cannot be asked) the first time."""
        if list_roots is None:  # nothing to remember (a 2026-07-28 request is a session of its own)
            return self._without_roots
        known = self._sessions.get(session_id)
        if known is not None:
            return known
        uris: list[str] = []
        try:
            with anyio.fail_after(LIST_ROOTS_TIMEOUT_S):
                result = await list_roots()
            uris = [str(root.uri) for root in result.roots]
        except Exception as exc:  # noqa: BLE001  # a client that fails to answer is served as one without roots
            logger.warning("roots/list failed (%s); serving without client roots", type(exc).__name__)
        chosen = await anyio.to_thread.run_sync(self._choose, uris)
        while len(self._sessions) >= MAX_SESSIONS:  # the oldest is asked again should it call again
            del self._sessions[next(iter(self._sessions))]
        self._sessions[session_id] = chosen
        return chosen

    def _choose(self, uris: list[str]) -> SessionRoot:
        base = self.base.root
        served: tuple[str, str] | None = None
        others: list[str] = []
        ignored: list[dict[str, str]] = []
        for uri in uris:
            path = _path_of(uri)
            reason = None
            if path is None:
                reason = "not a file:// URI"
            else:
                path = os.path.realpath(path)
                if not os.path.isdir(path):
                    reason = "not a directory"
                elif path in ("/", self._home):
                    reason = "the file system root or the home directory is never served; the operator may pass --root"
                elif not self.policy.client_chooses and not _within(path, base):
                    reason = "outside the server's root"
                elif path != base:
                    reason = self._narrowing_refusal(path)
                full = len(self._workspaces) >= MAX_WORKSPACES
                if reason is None and full and path != base and path not in self._workspaces:
                    reason = f"the server already serves {MAX_WORKSPACES} other client roots"
            if reason is not None or path is None:
                ignored.append({"uri": uri, "reason": reason or "not a file:// URI"})
            elif served is None:
                served = (uri, path)
            else:
                others.append(uri)
        if served is None:
            if self.policy.base_serves:
                return SessionRoot(self.base, None, others, ignored)
            return SessionRoot(
                None, None, others, ignored, error="The client offered no directory root to serve, and the server "
                "was started without --root outside a repository.",
            )  # fmt: skip
        uri, path = served
        workspace = self.base if path == base else self._workspace(path)
        return SessionRoot(workspace, uri, others, ignored)

    def _deny_for(self, path: str) -> list[str]:
        """The operator's deny-list re-anchored at `path`, a directory inside the root (`policy.denyrebase`).

        Raises:
            CannotRebase: `path` is denied, or the deny-list cannot be re-anchored there exactly.
        """
        ws = self.base.settings.workspace
        if self.policy.client_chooses:  # a root inside what the deny-list hides (~/.ssh, a .git) is not served
            if self.base.jail.deny.is_denied(path.lstrip("/")):
                raise CannotRebase(f"{path} is denied")
            return ws.effective_deny
        return rebase(ws.effective_deny, os.path.relpath(path, self.base.root))

    def _narrowing_refusal(self, path: str) -> str | None:
        try:
            self._deny_for(path)
        except CannotRebase:
            return "the server's deny-list hides it, or cannot be applied below it; the operator may pass --root"
        return None

    def _workspace(self, path: str) -> Workspace:
        with self._lock:
            workspace = self._workspaces.get(path)
            if workspace is None:
                settings = self.base.settings.model_copy(deep=True)
                settings.workspace.root = path
                settings.workspace.deny = self._deny_for(path)
                settings.workspace.extra_deny = []
                workspace = Workspace(settings, audit=self.base.audit)
                self._workspaces[path] = workspace
            return workspace

    def describe(self, session_id: str) -> dict[str, Any]:
        """The "roots" entry of status: where the root comes from, the client root served, the others offered."""
        known = self._sessions.get(session_id)
        entry: dict[str, Any] = {
            "source": self.policy.source,
            "client_roots": "chosen by the client" if self.policy.client_chooses else "may only narrow the root",
        }
        if known is not None:
            entry.update(served=known.served, others=known.others, ignored=known.ignored)
            if known.error:
                entry["error"] = known.error
        return entry

    def close(self) -> None:
        with self._lock:
            workspaces, self._workspaces = list(self._workspaces.values()), {}
        for workspace in workspaces:
            workspace.close()
