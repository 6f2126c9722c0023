"""The MCP SDK and uvicorn are used through their public API, except in one adapter module
(`repo_sandbox.wiring.sdk_adapter`), whose assumptions are checked against the installed versions here:
an SDK upgrade that breaks one fails these tests by name, and never costs a session its key at run time."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.server.connection import Connection
from mcp.shared.direct_dispatcher import DIRECT_TRANSPORT_KIND
from mcp.shared.transport_context import TransportContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from repo_sandbox.runtime.pipeline import CallOutcome, CallPipeline, Handler, ToolCall
from repo_sandbox.wiring import handlers, sdk_adapter
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.wiring.sdk_adapter import SdkAssumptionError
from repo_sandbox.wiring.session_ids import SessionIds
from repo_sandbox.workspace import Workspace

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "repo_sandbox"
ADAPTER = PACKAGE / "wiring" / "sdk_adapter.py"
LIBRARIES = ("mcp", "mcp_types", "uvicorn")
"""The libraries whose internals only the adapter may touch."""


def _trees(paths: Iterator[Path]) -> Iterator[tuple[Path, ast.Module]]:
    for path in paths:
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_names(trees: Iterator[tuple[Path, ast.Module]]) -> set[str]:
    """The private names a body of code defines: functions, classes, attributes, globals."""
    names: set[str] = set()
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return {name for name in names if _private(name)}


@cache
def _library_private_names() -> frozenset[str]:
    names: set[str] = set()
    for library in LIBRARIES:
        spec = importlib.util.find_spec(library)
        assert spec is not None and spec.submodule_search_locations, library
        for location in spec.submodule_search_locations:
            names |= _private_names(_trees(Path(location).rglob("*.py")))
    return frozenset(names)


def _sdk_methods() -> set[str]:
    """The methods of the SDK objects the server holds: replacing one on an instance is a monkeypatch."""
    from mcp.server.connection import Connection
    from mcp.server.lowlevel import Server
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    classes = (MCPServer, Server, ServerSession, Connection, StreamableHTTPSessionManager)
    return {name for cls in classes for name, value in vars(cls).items() if callable(value) and not _private(name)}


def _server_modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path != ADAPTER)


def _library_imports(tree: ast.Module) -> set[str]:
    """The names a module binds to things imported from the libraries."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] in LIBRARIES
            }
    return names


def _named_attribute(call: ast.Call) -> str | None:
    """The attribute `getattr(x, "name", ...)` (or hasattr, setattr) names, if a literal."""
    if isinstance(call.func, ast.Name) and call.func.id in ("getattr", "hasattr", "setattr") and len(call.args) > 1:
        name = call.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            return name.value
    return None


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def private_library_uses(paths: list[Path]) -> list[str]:
    """Every place in `paths` that touches a private name of the SDK or uvicorn, subclasses uvicorn's protocol,
    or replaces a library method on an object."""
    library_private = _library_private_names()
    foreign = library_private - _private_names(_trees(iter(paths)))
    foreign_methods = _sdk_methods()
    found: list[str] = []
    for path, tree in _trees(iter(paths)):
        imported = _library_imports(tree)
        where = path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE.parent) else path
        for node in ast.walk(tree):
            line = f"{where}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
                parts = node.module.split(".")
                names = [alias.name for alias in node.names]
                if any(map(_private, parts + names)) or "H11Protocol" in names or "h11_impl" in parts:
                    found.append(f"{line}: from {node.module} import {', '.join(names)}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in LIBRARIES and any(map(_private, alias.name.split("."))):
                        found.append(f"{line}: import {alias.name}")
            elif isinstance(node, ast.Attribute) and node.attr in foreign:
                found.append(f"{line}: .{node.attr}")
            elif isinstance(node, ast.Call) and _named_attribute(node) in foreign:
                found.append(f"{line}: getattr .{_named_attribute(node)}")
            elif isinstance(node, ast.Compare) and any(
                _literal(side) in foreign for side in [node.left, *node.comparators]
            ):
                found.append(f"{line}: compares with a private name")
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr in foreign_methods:
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{line}: replaces .{node.attr}")
            elif isinstance(node, ast.ClassDef) and any(_root_name(base) in imported for base in node.bases):
                found += [
                    f"{line}: {node.name} overrides {item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name in library_private
                ]
    return found


def test_no_module_but_the_adapter_touches_sdk_or_uvicorn_internals() -> None:
    assert private_library_uses(_server_modules()) == []


def test_the_scan_finds_each_kind_of_private_use(tmp_path: Path) -> None:
    """The scan itself works: each pattern the adapter exists for is caught in a module outside it."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from mcp.shared._context_streams import create_context_streams\n"
        "from uvicorn.protocols.http.h11_impl import H11Protocol\n"
        "low = server._lowlevel_server\n"
        "low.create_initialization_options = lambda: None\n"
        "connection = session._connection\n"
        "channel = getattr(session, '_request_outbound', None)\n"
        "direct = type(channel).__name__ == '_DirectDispatchContext'\n"
        "from mcp.server.streamable_http_manager import StreamableHTTPSessionManager as Base\n"
        "class Manager(Base):\n"
        "    def _admit_session(self, requestor): ...\n",
        encoding="utf-8",
    )
    found = private_library_uses([sample])
    assert len(found) == 8, found


def test_the_installed_sdk_and_uvicorn_have_what_the_adapter_assumes() -> None:
    assert sdk_adapter.check_assumptions() == [], sdk_adapter.installed_versions()
    assert sdk_adapter.guarded_protocol(1.0, 1.0).__mro__[2].__name__ == "H11Protocol"


def test_the_low_level_server_is_found_and_advertises_tool_list_changes() -> None:
    server: MCPServer[Any] = MCPServer("probe")
    lowlevel = sdk_adapter.lowlevel_server(server)
    sdk_adapter.advertise_tools_changed(server)
    capabilities = lowlevel.create_initialization_options().capabilities
    assert capabilities.tools is not None and capabilities.tools.list_changed is True


def test_a_missing_internal_fails_loudly_naming_the_installed_versions() -> None:
    with pytest.raises(SdkAssumptionError) as raised:
        sdk_adapter.lowlevel_server(object())  # pyright: ignore[reportArgumentType]
    assert f"mcp {importlib.metadata.version('mcp')}" in str(raised.value)
    assert f"uvicorn {importlib.metadata.version('uvicorn')}" in str(raised.value)


def test_a_session_whose_connection_cannot_be_found_gets_no_key_rather_than_a_shared_one() -> None:
    ids = SessionIds()
    with pytest.raises(SdkAssumptionError, match=r"_connection"):
        ids.id_for(object())


@pytest.mark.anyio
async def test_a_direct_request_whose_channel_wrapper_changed_gets_no_key() -> None:
    """2026-07-28 in-process requests each get a `Connection`: without the wrapped direct transport the adapter
    could only give every call a key of its own, so it refuses instead."""
    connection = Connection(object(), protocol_version=MODERN_PROTOCOL_VERSIONS[0])  # pyright: ignore[reportArgumentType]
    channel = SimpleNamespace(transport=TransportContext(kind=DIRECT_TRANSPORT_KIND, can_send_request=False))
    with pytest.raises(SdkAssumptionError, match=r"_inner"):
        SessionIds().id_for(SimpleNamespace(_connection=connection, _request_outbound=channel))


class RecordSessions:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        self.seen.append(call.context.session_id)
        return await call_next(call)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_in_process_requests_of_one_client_share_a_session_key(
    monkeypatch: pytest.MonkeyPatch, workspace: Workspace, mode: Any
) -> None:
    """The direct (in-process) dispatch of both eras: found through the adapter, one key per client."""
    recorder = RecordSessions()
    monkeypatch.setattr(
        handlers, "build_pipeline", lambda workspace, tools, loop=None: CallPipeline(workspace, tools, [recorder])
    )
    server = build_server(workspace)
    for _ in range(2):
        async with Client(server, mode=mode) as client:
            for _ in range(2):
                assert (await client.call_tool("count_lines", {})).is_error is False
    first, second = recorder.seen[:2], recorder.seen[2:]
    assert first[0] == first[1] and second[0] == second[1]
    assert first[0] != second[0]
