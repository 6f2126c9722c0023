"""The circuit breaker of one client session (DESIGN.md §6): pure state over an injected clock.

A *circuit* covers one tool and the arguments similar to the call that tripped it (its signature):
- closed (no circuit): calls run; each outcome is recorded;
- open: `failure_threshold` calls similar to each other failed in a row within `window_s`; similar calls
  are refused for `recovery_s`;
- half-open: after `recovery_s` one trial call goes through; a success closes the circuit, a failure
  opens it again for another `recovery_s`.

"In a row" looks only at calls of the same tool with similar arguments: a success of a *different* call
does not reset the streak, so alternating a failing call with an unrelated one does not escape the breaker,
and a failing call never blocks different arguments. A success of a similar call closes the circuit.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from repo_sandbox.config.model import GuardConfig
from repo_sandbox.runtime.clock import Clock
from repo_sandbox.runtime.similarity import Arguments, similarity

HISTORY_PER_TOOL: Final = 64
"""Recent outcomes kept per tool; enough for any threshold an operator would set."""

MAX_CIRCUITS_PER_TOOL: Final = 16
"""Circuits kept per tool; the oldest is forgotten beyond this."""

PROBE_RETRY_S: Final = 1.0
"""retry_after_s while another trial call of a half-open circuit is still running."""


@dataclass(frozen=True, slots=True)
class FailureInfo:
    """What the caller learns about the last failure behind a circuit."""

    code: str
    message: str
    hint: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


@dataclass(slots=True)
class _Event:
    at: float
    arguments: Arguments
    failure: FailureInfo | None


@dataclass(slots=True)
class Circuit:
    tool: str
    signature: Arguments
    """The arguments of the call that opened it; calls at least `similarity` alike are covered."""
    opened_at: float
    failures: int
    last_error: FailureInfo
    probing: bool = False
    """A half-open trial call is in flight."""


@dataclass(frozen=True, slots=True)
class Blocked:
    circuit: Circuit
    retry_after_s: float
    score: float
    """Similarity of the refused call to the circuit's signature."""


@dataclass(slots=True)
class Ticket:
    """Admission of one call: the half-open circuits it probes, if any."""

    probes: list[Circuit] = field(default_factory=list[Circuit])


@dataclass(frozen=True, slots=True)
class Change:
    kind: Literal["opened", "closed"]
    circuit: Circuit


class SessionBreaker:
    """Circuits of one session, for all tools."""

    def __init__(self, config: GuardConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self._history: dict[str, deque[_Event]] = {}
        self._circuits: dict[str, list[Circuit]] = {}

    def admit(self, tool: str, arguments: Arguments) -> Blocked | Ticket:
        """Refuse a call covered by an open circuit; let one trial call through a half-open one."""
        now = self.clock.now()
        half_open: list[Circuit] = []
        for circuit in self._circuits.get(tool, ()):
            score = similarity(arguments, circuit.signature)
            if score < self.config.similarity:
                continue
            waited = now - circuit.opened_at
            if waited < self.config.recovery_s:
                return Blocked(circuit, self.config.recovery_s - waited, score)
            if circuit.probing:
                return Blocked(circuit, PROBE_RETRY_S, score)
            half_open.append(circuit)
        for circuit in half_open:
            circuit.probing = True
        return Ticket(half_open)

    def release(self, ticket: Ticket) -> None:
        """The call ended without an outcome (e.g. it is waiting for the user): free its trial slot."""
        for circuit in ticket.probes:
            circuit.probing = False

    def record(self, tool: str, arguments: Arguments, ticket: Ticket, failure: FailureInfo | None) -> list[Change]:
        """Record an outcome; returns the circuits that opened or closed because of it."""
        self.release(ticket)
        now = self.clock.now()
        history = self._history.setdefault(tool, deque(maxlen=HISTORY_PER_TOOL))
        history.append(_Event(now, arguments, failure))
        circuits = self._circuits.setdefault(tool, [])
        if failure is None:
            closed = [c for c in circuits if c in ticket.probes or self._covers(c, arguments)]
            circuits[:] = [c for c in circuits if c not in closed]
            return [Change("closed", c) for c in closed]
        if ticket.probes:
            for circuit in ticket.probes:
                circuit.opened_at = now
                circuit.failures += 1
                circuit.last_error = failure
            return []
        streak = self._failure_streak(history, arguments, now)
        if streak < self.config.failure_threshold or any(self._covers(c, arguments) for c in circuits):
            return []
        circuit = Circuit(tool, arguments, now, streak, failure)
        circuits.append(circuit)
        del circuits[:-MAX_CIRCUITS_PER_TOOL]
        return [Change("opened", circuit)]

    def circuits(self, tool: str | None = None) -> list[Circuit]:
        if tool is not None:
            return list(self._circuits.get(tool, ()))
        return [c for circuits in self._circuits.values() for c in circuits]

    def state(self, circuit: Circuit) -> Literal["open", "half_open"]:
        return "open" if self.clock.now() - circuit.opened_at < self.config.recovery_s else "half_open"

    def snapshot(self) -> list[dict[str, Any]]:
        """The open and half-open circuits, for the status resource."""
        now = self.clock.now()
        return [
            {
                "tool": c.tool,
                "state": self.state(c),
                "arguments_like": c.signature,
                "failures": c.failures,
                "last_error": c.last_error.as_dict(),
                "retry_after_s": round(max(0.0, self.config.recovery_s - (now - c.opened_at)), 1),
            }
            for c in self.circuits()
        ]

    def _covers(self, circuit: Circuit, arguments: Arguments) -> bool:
        return similarity(arguments, circuit.signature) >= self.config.similarity

    def _failure_streak(self, history: deque[_Event], arguments: Arguments, now: float) -> int:
        """Failures of calls similar to `arguments`, newest first, back to a similar success or the window."""
        streak = 0
        for event in reversed(history):
            if now - event.at > self.config.window_s:
                break
            if similarity(event.arguments, arguments) < self.config.similarity:
                continue
            if event.failure is None:
                break
            streak += 1
        return streak
