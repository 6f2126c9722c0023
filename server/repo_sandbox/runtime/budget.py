"""The budget stage: what one client session may spend (DESIGN.md §6), and the degraded search near the end.

Spent per session: calls (every call that reaches this stage, including the guard's refusals), output bytes
(the serialised JSON of every result) and exec seconds (the `duration_ms` of execute_bash results, or of its
errors when they report one). A spent budget refuses further calls with `budget_exhausted`; the exec budget
refuses only execute_bash. When less than `degrade_below_bytes` of output budget is left, a search_text call
in "content" mode runs in "files_with_matches" mode instead and its result says so in `degraded`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from repo_sandbox.config.model import BudgetConfig
from repo_sandbox.errors import BudgetExhaustedError
from repo_sandbox.runtime.pipeline import CallOutcome, Handler, ToolCall
from repo_sandbox.runtime.sessions import SessionTable

EXEC_TOOL: Final = "execute_bash"
DEGRADABLE_TOOL: Final = "search_text"


@dataclass(slots=True)
class SessionSpend:
    calls: int = 0
    output_bytes: int = 0
    exec_s: float = 0.0
    degraded_calls: int = 0


def _remaining(limit: float, used: float) -> float | None:
    return None if limit == 0 else max(0, limit - used)


class BudgetStage:
    """Counts what each session spends and refuses calls once a budget is spent."""

    def __init__(self, config: BudgetConfig) -> None:
        self.config = config
        self.sessions: SessionTable[SessionSpend] = SessionTable(SessionSpend)

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        spend = self.sessions.get(call.context.session_id)
        self._refuse_if_spent(spend, call.tool)
        degraded = self._degrade(spend, call)
        outcome = await call_next(call)
        spend.calls += 1
        spend.output_bytes += outcome.json_bytes()
        if call.tool == EXEC_TOOL:
            spend.exec_s += _exec_seconds(outcome)
        if degraded is not None and not outcome.is_error:
            spend.degraded_calls += 1
            outcome = replace(outcome, payload={**outcome.payload, "degraded": degraded})
        return outcome

    def _refuse_if_spent(self, spend: SessionSpend, tool: str) -> None:
        config = self.config
        checks: list[tuple[str, float, float, str]] = [
            ("calls", config.max_calls, spend.calls, "tool calls"),
            ("output_bytes", config.max_output_bytes, spend.output_bytes, "bytes of tool output"),
        ]
        if tool == EXEC_TOOL:
            checks.append(("exec_seconds", config.max_exec_s, spend.exec_s, "seconds of execute_bash run time"))
        for budget, limit, used, unit in checks:
            if limit and used >= limit:
                raise BudgetExhaustedError(
                    f"This session has spent its budget of {limit:g} {unit}.",
                    hint="The session budget is spent; finish the task with what you have, or tell the user.",
                    budget=budget,
                    used=round(used, 3),
                    limit=limit,
                )

    def _degrade(self, spend: SessionSpend, call: ToolCall) -> str | None:
        """Switch a content search to file names only when the output budget is nearly spent."""
        config = self.config
        if call.tool != DEGRADABLE_TOOL or not config.max_output_bytes or not isinstance(call.arguments, dict):
            return None
        left = config.max_output_bytes - spend.output_bytes
        arguments: dict[str, Any] = call.arguments  # pyright: ignore[reportUnknownVariableType]
        if left >= config.degrade_below_bytes or arguments.get("output_mode", "content") != "content":
            return None
        call.arguments = {**arguments, "output_mode": "files_with_matches"}
        return (
            f"Only {left} bytes of this session's output budget are left, so this search returned the matching "
            "files instead of the matching lines (output_mode 'files_with_matches'). Read only the lines you need."
        )

    def snapshot(self, session_id: str) -> dict[str, Any]:
        spend = self.sessions.peek(session_id) or SessionSpend()
        config = self.config
        rows = {
            "calls": (config.max_calls, spend.calls),
            "output_bytes": (config.max_output_bytes, spend.output_bytes),
            "exec_seconds": (config.max_exec_s, round(spend.exec_s, 3)),
        }
        state: dict[str, Any] = {
            name: {"used": used, "limit": limit or None, "remaining": _remaining(limit, used)}
            for name, (limit, used) in rows.items()
        }
        state["exhausted"] = [name for name, (limit, used) in rows.items() if limit and used >= limit]
        left = config.max_output_bytes - spend.output_bytes
        state["search_degraded"] = bool(config.max_output_bytes) and left < config.degrade_below_bytes
        state["degraded_calls"] = spend.degraded_calls
        return state


def _exec_seconds(outcome: CallOutcome) -> float:
    """Run time of an execute_bash outcome: `duration_ms` of the result, or of the error's details."""
    source = outcome.payload["error"].get("details", {}) if outcome.is_error else outcome.payload
    duration = source.get("duration_ms")
    return float(duration) / 1000 if isinstance(duration, int | float) and not isinstance(duration, bool) else 0.0
