"""The guard stage: the circuit breaker and the repeated-call guard, per client session.

Which failures count towards the breaker: every graded error outcome of the tool (invalid arguments,
not found, permission denied, timeouts, approval denied, internal errors, ...), except the guard's own
refusals (`circuit_open`, `repeated_call`). Refusals by stages outside the guard (the budget) never reach it.
A call that ends without an outcome (cancelled, or waiting for the user's answer) counts as nothing.

When a circuit opens or closes, the session is told that its tool list changed (the listing marks the
blocked arguments), through `CallContext.tools_changed` when the transport provides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repo_sandbox.config.model import GuardConfig
from repo_sandbox.errors import CircuitOpenError, RepeatedCallError
from repo_sandbox.runtime.breaker import Blocked, FailureInfo, SessionBreaker
from repo_sandbox.runtime.clock import Clock
from repo_sandbox.runtime.pipeline import CallOutcome, Handler, ToolCall
from repo_sandbox.runtime.sessions import SessionTable
from repo_sandbox.runtime.similarity import Arguments, canonical, describe, normalise_arguments
from repo_sandbox.runtime.stats import UNKNOWN_TOOL


@dataclass(slots=True)
class RepeatTracker:
    """The session's latest call and how many times in a row it was made identically."""

    key: str = ""
    count: int = 0
    last_at: float = 0.0

    def is_exhausted(self, key: str, now: float, config: GuardConfig) -> bool:
        return key == self.key and self.count >= config.repeat_threshold and now - self.last_at < config.window_s

    def record(self, key: str, now: float, config: GuardConfig) -> None:
        if key == self.key and now - self.last_at < config.window_s:
            self.count += 1
        else:
            self.key, self.count = key, 1
        self.last_at = now


class SessionGuard:
    """Everything the guard remembers about one session."""

    def __init__(self, config: GuardConfig, clock: Clock) -> None:
        self.breaker = SessionBreaker(config, clock)
        self.repeats = RepeatTracker()

    def snapshot(self) -> dict[str, Any]:
        return {
            "circuits": self.breaker.snapshot(),
            "last_call": {"key": self.repeats.key, "identical_in_a_row": self.repeats.count}
            if self.repeats.count
            else None,
        }


def failure_of(outcome: CallOutcome) -> FailureInfo | None:
    if not outcome.is_error:
        return None
    error = outcome.payload["error"]
    return FailureInfo(str(error["code"]), str(error["message"]), str(error["hint"]))


def guarded_call(call: ToolCall) -> tuple[str, Arguments]:
    """The (tool, normalised arguments) the guard keys on; unknown tool names share one key (bounded memory)."""
    arguments = normalise_arguments(call.spec, call.arguments)
    if call.spec is not None:
        return call.tool, arguments
    return UNKNOWN_TOOL, {"(tool)": call.tool, **arguments}


def circuit_open_error(tool: str, blocked: Blocked) -> CircuitOpenError:
    circuit = blocked.circuit
    last = circuit.last_error
    retry_after = round(blocked.retry_after_s, 1)
    return CircuitOpenError(
        f"{tool} is temporarily blocked for arguments like {describe(circuit.signature)}: "
        f"{circuit.failures} similar calls failed in a row (last error: {last.code}).",
        # One instruction: the last error's own hint (often "..., then retry") stays in details.last_error.
        hint="Change the approach: use other arguments or another tool (details.last_error says what failed).",
        tool=tool,
        failures=circuit.failures,
        last_error=last.as_dict(),
        retry_after_s=retry_after,
        blocked_arguments=circuit.signature,
        similarity=round(blocked.score, 2),
    )


class GuardStage:
    """Refuses calls that repeat a failing (or an unchanging) call, per session."""

    def __init__(self, config: GuardConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.sessions: SessionTable[SessionGuard] = SessionTable(lambda: SessionGuard(config, clock))

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        guard = self.sessions.get(call.context.session_id)
        tool, arguments = guarded_call(call)
        key = f"{tool} {canonical(arguments)}"
        if guard.repeats.is_exhausted(key, self.clock.now(), self.config):
            raise RepeatedCallError(
                f"{call.tool} was called with identical arguments {guard.repeats.count} times in a row.",
                tool=call.tool,
                count=guard.repeats.count,
                retry_after_s=round(self.config.window_s - (self.clock.now() - guard.repeats.last_at), 1),
            )
        admission = guard.breaker.admit(tool, arguments)
        if isinstance(admission, Blocked):
            raise circuit_open_error(call.tool, admission)
        try:
            outcome = await call_next(call)
        except BaseException:
            guard.breaker.release(admission)
            raise
        changes = guard.breaker.record(tool, arguments, admission, failure_of(outcome))
        guard.repeats.record(key, self.clock.now(), self.config)
        notify = call.context.tools_changed
        if changes and notify is not None:
            await notify()
        return outcome

    def blocked_descriptions(self, session_id: str) -> dict[str, list[str]]:
        """Per tool, a sentence for each circuit, to append to the tool's description in this session's listing."""
        guard = self.sessions.peek(session_id)
        if guard is None:
            return {}
        notes: dict[str, list[str]] = {}
        for circuit in guard.breaker.circuits():
            state = guard.breaker.state(circuit)
            when = "a single trial call is allowed now" if state == "half_open" else "other arguments still work"
            notes.setdefault(circuit.tool, []).append(
                f"Temporarily blocked for arguments like {describe(circuit.signature)} after {circuit.failures} "
                f"failures in a row (last error: {circuit.last_error.code}); {when}."
            )
        return notes
