"""Servers started by a client that passes on only a default environment (the MCP Inspector, like Node's MCP
SDK, keeps little more than HOME and PATH) still keep their file facts in this test run's cache."""

from __future__ import annotations

import os

from mcp.client.stdio import get_default_environment


def default_client_env() -> dict[str, str]:
    """The environment the MCP SDK's stdio client passes on by default, plus this test run's cache."""
    return {**get_default_environment(), "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}


def in_test_cache(argv: list[str]) -> list[str]:
    """`argv` run with this test run's `XDG_CACHE_HOME` (set by the root conftest), whatever the client passes."""
    return ["env", f"XDG_CACHE_HOME={os.environ['XDG_CACHE_HOME']}", *argv]
