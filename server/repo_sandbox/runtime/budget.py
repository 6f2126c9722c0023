"""The budget stage: what one client session may spend (DESIGN.md §6), and the degraded search near the end.

Spent per session: calls (every call that reaches this stage, including the guard's refusals), output bytes
(the serialised JSON of every result) and exec seconds (the `duration_ms` of execute_bash results, or of its
errors when they report one). A spent budget refuses further calls with `budget_exhausted`; the exec budget
refuses only execute_bash, and an execute_bash call gets no more time than the exec budget has left: its
timeout is lowered to what is left, and a command stopped by that lowered timeout is `budget_exhausted` (with
its partial output), not `timeout`.

A command reserves its timeout (as lowered) from the exec budget when it starts, and gives back what it did not
use when it ends: ten concurrent 8 s commands under a 10 s budget no longer all run. While running commands
hold what is left, another one is answered `too_many_commands` (retryable, `retry_after_s`) rather than
started with the crumbs; with none running, it gets what is left, as before. Commands running at once are
capped per session (`max_concurrent_exec`) and per server (`max_concurrent_exec_server`), answered the same way.
When less than `degrade_below_bytes` of output budget is left, a search_text call
in "content" mode runs in "files_with_matches" mode instead and its result says so in `degraded`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Final

from repo_sandbox.config.model import BudgetConfig, LimitsConfig
from repo_sandbox.errors import BudgetExhaustedError, TooManyCommandsError
from repo_sandbox.runtime.pipeline import CallOutcome, Handler, ToolCall
from repo_sandbox.runtime.sessions import SessionTable

EXEC_TOOL: Final = "execute_bash"
DEGRADABLE_TOOL: Final = "search_text"


@dataclass(slots=True, eq=False)
class Running:
    """One execute_bash call in flight: the exec seconds it holds and when its timeout ends."""

    reserved_s: float
    ends_at: float


@dataclass(slots=True)
class SessionSpend:
    calls: int = 0
    output_bytes: int = 0
    exec_s: float = 0.0
    degraded_calls: int = 0
    running: list[Running] = field(default_factory=list[Running])

    def held_s(self) -> float:
        return sum(entry.reserved_s for entry in self.running)


def _retry_after(running: list[Running]) -> float:
    """Seconds until the first of `running` must have ended (its timeout), at least 0.1."""
    return round(max(0.1, min(entry.ends_at for entry in running) - time.monotonic()), 1)


def _remaining(limit: float, used: float) -> float | None:
    return None if limit == 0 else max(0, limit - used)


class BudgetStage:
    """Counts what each session spends and refuses calls once a budget is spent."""

    def __init__(self, config: BudgetConfig, limits: LimitsConfig) -> None:
        self.config = config
        self.limits = limits
        self.sessions: SessionTable[SessionSpend] = SessionTable(SessionSpend)
        self.running: list[Running] = []
        """execute_bash calls in flight in every session."""

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        spend = self.sessions.get(call.context.session_id)
        self._refuse_if_spent(spend, call.tool)
        degraded = self._degrade(spend, call)
        if call.tool != EXEC_TOOL:
            return self._count(spend, call, await call_next(call), degraded, None)
        self._admit(spend)
        reserved_s, capped_s = self._reserve_exec_time(spend, call)
        entry = Running(reserved_s, time.monotonic() + reserved_s)
        spend.running.append(entry)
        self.running.append(entry)
        try:
            outcome = await call_next(call)
        finally:
            spend.running.remove(entry)
            self.running.remove(entry)
        return self._count(spend, call, outcome, degraded, capped_s)

    def _count(
        self, spend: SessionSpend, call: ToolCall, outcome: CallOutcome, degraded: str | None, capped_s: float | None
    ) -> CallOutcome:
        spend.calls += 1
        spend.output_bytes += outcome.json_bytes()
        if call.tool == EXEC_TOOL:
            spend.exec_s += _exec_seconds(outcome)
            if capped_s is not None and outcome.is_error and outcome.payload["error"].get("code") == "timeout":
                self._stopped_by_budget(spend, capped_s, outcome.payload["error"].get("details", {}))
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

    def _admit(self, spend: SessionSpend) -> None:
        """Raises: TooManyCommandsError when the session or the server runs as many commands as allowed."""
        config = self.config
        for running, limit, scope in (
            (spend.running, config.max_concurrent_exec, "session"),
            (self.running, config.max_concurrent_exec_server, "server"),
        ):
            if limit and len(running) >= limit:
                raise TooManyCommandsError(
                    f"This {scope} already runs {len(running)} execute_bash commands, the most it may run at once.",
                    limit="concurrent_commands", scope=scope, running=len(running), max=limit,
                    retry_after_s=_retry_after(running),
                )  # fmt: skip

    def _reserve_exec_time(self, spend: SessionSpend, call: ToolCall) -> tuple[float, float | None]:
        """(seconds the call holds from the exec budget, its lowered timeout or None when its own fits).

        The exec seconds left are the budget less what was spent and what running commands hold: a timeout
        that does not fit is lowered to them, unless running commands hold part of the budget (they may give
        it back: `too_many_commands`). An invalid timeout is left for the argument check to refuse.

        Raises: TooManyCommandsError.
        """
        if not isinstance(call.arguments, dict):
            return 0.0, None
        arguments: dict[str, Any] = call.arguments  # pyright: ignore[reportUnknownVariableType]
        requested = arguments.get("timeout")
        if requested is None:
            requested = self.limits.default_timeout_s
        elif isinstance(requested, bool) or not isinstance(requested, int | float):
            return 0.0, None
        if not 0 < requested <= self.limits.max_timeout_s:
            return 0.0, None
        if not self.config.max_exec_s:
            return float(requested), None
        held = spend.held_s()
        left = self.config.max_exec_s - spend.exec_s - held
        if left >= requested:
            return float(requested), None
        if spend.running:
            raise TooManyCommandsError(
                f"The {max(left, 0):.3g} s left of this session's execute_bash budget are less than this command's "
                f"timeout of {requested:g} s while running commands hold {held:.3g} s of it.",
                limit="exec_seconds", reserved_s=round(held, 3), used=round(spend.exec_s, 3),
                max=self.config.max_exec_s, retry_after_s=_retry_after(spend.running),
            )  # fmt: skip
        call.arguments = {**arguments, "timeout": left}
        return left, left

    def _stopped_by_budget(self, spend: SessionSpend, capped_s: float, details: dict[str, Any]) -> None:
        """Raises: BudgetExhaustedError for a command the lowered timeout stopped, with its partial output."""
        partial = {key: details[key] for key in ("stdout", "stderr", "stdout_truncated", "stderr_truncated",
                                                 "duration_ms", "sandbox") if key in details}  # fmt: skip
        raise BudgetExhaustedError(
            f"The command was stopped after {capped_s:.3g} s, when this session's budget of "
            f"{self.config.max_exec_s:g} seconds of execute_bash run time ran out.",
            hint="The session budget is spent; finish the task with what you have, or tell the user.",
            budget="exec_seconds",
            used=round(spend.exec_s, 3),
            limit=self.config.max_exec_s,
            **partial,
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
