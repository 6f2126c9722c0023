"""Serve over stdio: stdout carries only protocol messages; logs go to stderr."""

from __future__ import annotations

import anyio

from repo_sandbox.app import build_server
from repo_sandbox.workspace import Workspace


def serve_stdio(workspace: Workspace) -> None:
    server = build_server(workspace)
    anyio.run(server.run_stdio_async)
