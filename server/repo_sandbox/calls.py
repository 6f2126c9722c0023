"""What one tool call carries besides its arguments: who is calling and what the transport can do for the call
(`CallContext`: report progress, ask the user, approve a command, tell the client its tool list changed).
The MCP handlers fill it in, with functions made by `runtime.elicitation` and `runtime.approvals`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

ProgressReporter = Callable[[float, float | None, str | None], Awaitable[None]]
"""`await report(progress, total, message)`: a progress notification to the caller (no-op if not asked)."""

ElicitAction = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class ElicitAnswer:
    action: ElicitAction
    content: dict[str, Any] | None = None


Elicit = Callable[[str, dict[str, Any]], Awaitable[ElicitAnswer]]
"""`await elicit(message, requested_schema)`: ask the user to fill a flat form; their answer."""

Approve = Callable[[str, Mapping[str, Any]], Awaitable[bool]]
"""`await approve(command_text, details)`: whether the user lets this one command run."""

ToolsChanged = Callable[[], Awaitable[None]]
"""`await tools_changed()`: tell this session's client that its tool list changed."""


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling, and what the transport can do for this call (each capability None when it cannot)."""

    session_id: str = "local"
    """Stable id of the client session (one per connection); state such as budgets is kept per session."""
    request_id: str | None = None
    """The JSON-RPC request id, when there is one."""
    report_progress: ProgressReporter | None = None
    """Sends progress notifications for this call, when the transport can."""
    elicit: Elicit | None = None
    """Asks the user (`ask_user`), present only when the client can elicit."""
    approve: Approve | None = None
    """Asks the user to approve one command (`exec.ask`), present only when the client can elicit."""
    tools_changed: ToolsChanged | None = None
    """Notifies the client of a changed tool list (the guard, when a circuit opens or closes)."""
