"""Helpers to drive a repo-sandbox server through the real MCP SDK client (tests, demos, embedding).

`open_session(server, mode)` connects an in-memory `Client` in either protocol era, counts the
tools/list_changed notifications it receives (legacy: the notification; 2026-07-28: a `subscriptions/listen`
stream), and answers elicitations with a `ScriptedUser`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.server import MCPServer
from mcp.types import ElicitRequestParams, ElicitResult, TextResourceContents, ToolListChangedNotification

Mode = str
"""'legacy' (the 2025-11-25 handshake) or 'auto' (2026-07-28 against this server)."""

ERAS: tuple[Mode, ...] = ("legacy", "auto")

ServerFactory = Callable[..., MCPServer[Any]]
"""`factory(**config_sections) -> server`, as the test fixtures provide it."""


@dataclass
class ScriptedUser:
    """Answers elicitations from a script and remembers what it was shown."""

    answers: list[ElicitResult] = field(default_factory=list[ElicitResult])
    shown: list[ElicitRequestParams] = field(default_factory=list[ElicitRequestParams])

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.shown.append(params)
        if not self.answers:
            return ElicitResult(action="cancel")
        return self.answers.pop(0)


@dataclass
class Session:
    """One connected client: calls tools, reads resources, and counts list_changed notifications."""

    client: Client
    list_changes: int = 0
    changed: anyio.Event = field(default_factory=anyio.Event)

    def note_change(self) -> None:
        self.list_changes += 1
        self.changed.set()

    async def wait_for_change(self, count: int) -> None:
        with anyio.fail_after(5):
            while self.list_changes < count:
                await self.changed.wait()
                self.changed = anyio.Event()

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The structured result; an error result as its `error` object with `is_error` added."""
        with anyio.fail_after(10):
            result = await self.client.call_tool(tool, arguments)
        payload = result.structured_content
        assert isinstance(payload, dict)
        if result.is_error:
            return {"is_error": True, **payload["error"]}
        return payload  # pyright: ignore[reportUnknownVariableType]

    async def resource(self, uri: str) -> dict[str, Any]:
        with anyio.fail_after(5):
            result = await self.client.read_resource(uri)
        content = result.contents[0]
        assert isinstance(content, TextResourceContents)
        return json.loads(content.text)

    async def status(self) -> dict[str, Any]:
        return await self.resource("repo-sandbox://status")

    async def tool_descriptions(self) -> dict[str, str]:
        with anyio.fail_after(5):
            listing = await self.client.list_tools()
        return {tool.name: tool.description or "" for tool in listing.tools}


@asynccontextmanager
async def open_session(
    server: MCPServer[Any], mode: Mode, *, user: ScriptedUser | None = None
) -> AsyncIterator[Session]:
    holder: list[Session] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification) and holder:
            holder[0].note_change()

    async with Client(
        server,
        mode=mode,  # pyright: ignore[reportArgumentType]
        message_handler=on_message,
        elicitation_callback=user,
    ) as client:
        session = Session(client)
        holder.append(session)
        if client.protocol_version == "2026-07-28":
            async with anyio.create_task_group() as tg, client.listen(tools_list_changed=True) as subscription:

                async def pump() -> None:
                    async for _event in subscription:
                        session.note_change()

                tg.start_soon(pump)
                yield session
                tg.cancel_scope.cancel()
        else:
            yield session
