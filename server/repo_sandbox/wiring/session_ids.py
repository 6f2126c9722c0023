"""The session a request belongs to: the key of per-session state (budgets, circuit breakers, roots, stats)."""

from __future__ import annotations

import uuid
import weakref
from typing import Any

from mcp.server import ServerRequestContext

from repo_sandbox.wiring.scope import transport_session_id
from repo_sandbox.wiring.sdk_adapter import connection_of


class SessionIds:
    """A stable random id per client connection (`sdk_adapter.connection_of` says which requests share one)."""

    def __init__(self) -> None:
        self._ids: dict[int, tuple[weakref.ref[object], str]] = {}
        """By object identity (not equality: transport contexts are frozen dataclasses that compare equal)."""

    def id_for(self, session: object) -> str:
        """Raises `SdkAssumptionError` when the SDK no longer tells the connection: never a shared key."""
        stream = connection_of(session)
        key = id(stream)
        entry = self._ids.get(key)
        if entry is not None and entry[0]() is stream:
            return entry[1]
        new_id = uuid.uuid4().hex[:16]
        try:
            ref = weakref.ref(stream, lambda dead, key=key: self._forget(key, dead))
        except TypeError:  # not weak-referenceable: treat the request as a session of its own
            return new_id
        self._ids[key] = (ref, new_id)
        return new_id

    def _forget(self, key: int, dead: weakref.ref[object]) -> None:
        entry = self._ids.get(key)
        if entry is not None and entry[0] is dead:
            del self._ids[key]

    def session_of(self, ctx: ServerRequestContext[Any]) -> str:
        """One id per client session: the transport's (HTTP session, WebSocket) when it has one, else the
        connection's."""
        return transport_session_id(ctx.request) or self.id_for(ctx.session)
