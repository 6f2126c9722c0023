"""A WebSocket client transport for the mcp 2.x `Client` (the SDK has none since 2.0), for tests.

Same wire as mcp 1.x `websocket_client`: subprotocol `mcp`, one JSON-RPC message per text frame.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol


@asynccontextmanager
async def websocket_client(
    url: str, headers: Mapping[str, str] | None = None
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](16)
    async with connect(url, subprotocols=[Subprotocol("mcp")], additional_headers=dict(headers or {})) as ws:

        async def reader() -> None:
            async with read_writer:
                try:
                    async for frame in ws:
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(frame, by_name=False)
                        except Exception as exc:  # noqa: BLE001  # handed to the session, as the SDK's transports do
                            await read_writer.send(exc)
                            continue
                        await read_writer.send(SessionMessage(message))
                except ConnectionClosed:
                    pass

        async def writer() -> None:
            async with write_reader:
                async for session_message in write_reader:
                    await ws.send(session_message.message.model_dump_json(by_alias=True, exclude_unset=True))

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()
