"""What a network transport tells the tool layer about the connection a request came in on.

Kept free of heavy imports: `session_ids` reads it on every call.
"""

from __future__ import annotations

from typing import Any, Final

SESSION_ID_KEY: Final = "repo_sandbox.session_id"
"""ASGI scope key holding the id of the session (WebSocket connection or HTTP session) a request belongs to."""


def transport_session_id(request: Any) -> str | None:
    """The session id a network transport stamped on the request's ASGI scope, if any.

    `request` is the SDK's transport request object (a Starlette `Request` or `WebSocket`), or None on stdio.
    """
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return None
    value = scope.get(SESSION_ID_KEY)  # pyright: ignore[reportUnknownMemberType]
    return value if isinstance(value, str) else None
