"""The stats stage: per tool, calls, errors and total time, per session and for the whole server.

The source documents' `registry.get_stats(tool) -> {calls, errors, total_duration_ms}`, served in
`repo-sandbox://status`. It runs outside the budget and the guard so that their refusals are counted too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from repo_sandbox.runtime.pipeline import CallOutcome, Handler, ToolCall
from repo_sandbox.runtime.sessions import SessionTable

UNKNOWN_TOOL = "(unknown tool)"
"""Calls to names that are not tools are counted together (a client cannot grow the table at will)."""


@dataclass(slots=True)
class ToolStats:
    calls: int = 0
    errors: int = 0
    total_ms: float = 0.0
    error_codes: Counter[str] = field(default_factory=Counter[str])

    def add(self, outcome: CallOutcome) -> None:
        self.calls += 1
        self.total_ms += outcome.duration_ms
        if outcome.is_error:
            self.errors += 1
            self.error_codes[outcome.error_code or "unknown"] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "errors": self.errors,
            "total_ms": round(self.total_ms, 3),
            "avg_ms": round(self.total_ms / self.calls, 3) if self.calls else 0.0,
            "error_codes": dict(self.error_codes.most_common()),
        }


ToolTable = dict[str, ToolStats]


class StatsStage:
    def __init__(self) -> None:
        self.sessions: SessionTable[ToolTable] = SessionTable(dict[str, ToolStats])
        self.server: ToolTable = {}

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        outcome = await call_next(call)
        tool = call.tool if call.spec is not None else UNKNOWN_TOOL
        for table in (self.sessions.get(call.context.session_id), self.server):
            table.setdefault(tool, ToolStats()).add(outcome)
        return outcome

    def snapshot(self, session_id: str) -> dict[str, Any]:
        session = self.sessions.peek(session_id) or {}
        return {
            "session": {tool: stats.as_dict() for tool, stats in sorted(session.items())},
            "server": {tool: stats.as_dict() for tool, stats in sorted(self.server.items())},
        }
