"""`repo-sandbox serve`: choose the root (`repo_sandbox.roots`), start the transport, print the start line.

Only the standard library is imported at module level: a client that spawns the server waits for `initialize`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repo_sandbox import __version__, heap

if TYPE_CHECKING:
    from repo_sandbox.config.model import Settings


def configure_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def serve(settings: Settings) -> int:
    """Serve over the configured transport, once the root is chosen (`repo_sandbox.roots`); the exit status."""
    from repo_sandbox.roots import RootPolicy, cwd_refusal, no_root_message
    from repo_sandbox.workspace import Workspace

    configure_logging(settings.server.log_level)
    stdio = settings.server.transport == "stdio"
    placeholder: str | None = None
    if settings.workspace.root_given:
        policy = RootPolicy("--root/config")
    elif (reason := cwd_refusal(Path.cwd(), Path.home())) is None:
        policy = RootPolicy("cwd", client_chooses=stdio)
    elif stdio:  # the client may still name a root (MCP roots); until it does, an empty directory stands in
        placeholder = settings.workspace.root = tempfile.mkdtemp(prefix="repo-sandbox-no-root-")
        policy = RootPolicy("none", base_serves=False, client_chooses=True, refusal=no_root_message(Path.cwd(), reason))
    else:
        print(no_root_message(Path.cwd(), reason), file=sys.stderr)
        return 2
    workspace = Workspace(settings)
    try:
        if not stdio:
            if error := _exec_policy_error(workspace):
                print(error, file=sys.stderr)
                return 2
            _probe_exec_sandbox(workspace)
            print(start_line(workspace, policy), file=sys.stderr, flush=True)
            return _serve_http(workspace, policy)
        from repo_sandbox.transports.stdio import serve_stdio

        # A client that spawns the server waits for `initialize`; what that does not need runs once it is answered.
        return serve_stdio(workspace, roots=policy, after_handshake=lambda: _after_handshake(workspace, policy))
    except KeyboardInterrupt:
        pass
    finally:
        workspace.close()
        if placeholder is not None:
            with contextlib.suppress(OSError):
                os.rmdir(placeholder)
    return 0


def start_line(workspace: Any, policy: Any) -> str:
    """The one line on stderr at start: version, root, transport, sandbox backend, search engine, rg version."""
    from repo_sandbox.engine.select import report as search_report

    root = {
        "--root/config": workspace.root,
        "cwd": f"{workspace.root} (the current directory)",
        "none": "the client's first MCP root",
    }[policy.source]
    if policy.client_chooses and policy.source == "cwd":
        root += " unless the client names a root"
    settings = workspace.settings
    sandbox = "off"
    if settings.exec.enabled:
        from repo_sandbox.exec.service import exec_service

        sandbox = exec_service(workspace).report().get("sandbox_backend") or "none (execute_bash refuses every command)"
    search = search_report(workspace)
    rg = search["ripgrep"]["version"] if search["ripgrep"] else "not found"
    return (
        f"repo-sandbox {__version__}: root {root}; transport {settings.server.transport}; sandbox {sandbox}; "
        f"search {search['engine']} (rg {rg})"
    )


def _after_handshake(workspace: Any, policy: Any) -> None:
    """The rest of a stdio server's start-up: the root (a server without one stops unless the client declared
    MCP roots), the command policy's check (left for later by `_settings`: it loads the whole policy and parses
    its examples), then the sandbox probe and the start line.

    Raises:
        StopServing: no root, or the command policy does not hold (the server stops, as it would have refused
            to start).
    """
    from repo_sandbox.transports.stdio import StopServing

    if not policy.base_serves and not policy.client_declared_roots.is_set():
        raise StopServing(2, policy.refusal)
    if error := _exec_policy_error(workspace):
        raise StopServing(2, error)
    _probe_exec_sandbox(workspace)
    print(start_line(workspace, policy), file=sys.stderr, flush=True)
    heap.settle()


def _exec_policy_error(workspace: Any) -> str | None:
    """What is wrong with the command policy (names, built-ins, examples), as the configuration error to print."""
    from repo_sandbox.policy.commands import validate_exec_config

    try:
        validate_exec_config(workspace.settings.exec)
    except ValueError as exc:
        return f"repo-sandbox: configuration error:\n[exec]: {exc}"
    return None


def _probe_exec_sandbox(workspace: Any) -> None:
    """Probe the OS sandbox once at start-up; it is logged (loudly when there is none)."""
    if workspace.settings.exec.enabled:
        from repo_sandbox.exec.service import exec_service

        exec_service(workspace).report()


def _serve_http(workspace: Any, policy: Any) -> int:
    import os

    from mcp.server.request_state import RequestStateSecurity

    from repo_sandbox.transports.auth import StartupRefused, load_request_state_keys
    from repo_sandbox.transports.serve import serve_http
    from repo_sandbox.wiring.assembly import build_server

    settings = workspace.settings.server
    try:
        keys = load_request_state_keys(settings, os.environ)
        security = RequestStateSecurity(keys=keys) if keys else None
        server = build_server(workspace, request_state_security=security, roots=policy)
        heap.settle()
        serve_http(server, settings)
    except StartupRefused as exc:
        print(f"repo-sandbox: {exc}", file=sys.stderr)
        return 2
    return 0
