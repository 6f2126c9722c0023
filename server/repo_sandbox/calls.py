"""What one tool call carries besides its arguments: who is calling (`CallContext`), and the capabilities the
transport puts in its `extras` (asking the user, approving a command), with the keys tools and stages find them
by. The MCP handlers fill them in, with functions made by `runtime.elicitation` and `runtime.approvals`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

ProgressReporter = Callable[[float, float | None, str | None], Awaitable[None]]
"""`await report(progress, total, message)`: a progress notification to the caller (no-op if not asked)."""


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling: what the transport knows about the caller of one tool call."""

    session_id: str = "local"
    """Stable id of the client session (one per connection); state such as budgets is kept per session."""
    request_id: str | None = None
    """The JSON-RPC request id, when there is one."""
    report_progress: ProgressReporter | None = None
    """Sends progress notifications for this call, when the transport can."""
    extras: dict[str, Any] = field(default_factory=dict[str, Any])
    """Transport-specific capabilities (e.g. an elicitation function) that stages and async tools may use."""


ELICIT: Final = "elicit"
"""Key in `CallContext.extras` of the `Elicit` function, present only when the client can elicit."""

ElicitAction = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class ElicitAnswer:
    action: ElicitAction
    content: dict[str, Any] | None = None


Elicit = Callable[[str, dict[str, Any]], Awaitable[ElicitAnswer]]
"""`await elicit(message, requested_schema)`: ask the user to fill a flat form; their answer."""


APPROVE: Final = "approve"
"""Key in `CallContext.extras` of the `Approve` function."""

Approve = Callable[[str, Mapping[str, Any]], Awaitable[bool]]
