"""Audit events: the shape of a tool-call event and of a policy-decision event, and the processor chain.

An event is a plain dict. `build_processors` lists the steps it goes through before it is written
(STYLE.md rule 8, as in structlog): time stamp, redaction (when on), size cap; rendering to one JSON line
is the last step before the sink. Field names are fixed here so that `repo-sandbox audit` can read them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from repo_sandbox.audit.known import KnownSecrets
    from repo_sandbox.audit.redact import EventDict, Processor

CALL_EVENT: Final = "tool_call"
"""`event` of the one record written per tool call."""
DECISION_EVENT: Final = "policy_decision"
"""`event` of a record written when a policy (command rules, breaker, budget, masking...) decides something."""

Clock = Callable[[], float]
"""Seconds since the epoch (`time.time`); injected in tests."""


@dataclass(frozen=True, slots=True)
class CallScope:
    """The call being served right now, so that code deep inside it can emit events without plumbing."""

    session: str
    request_id: str | None
    tool: str


CURRENT_CALL: Final[ContextVar[CallScope | None]] = ContextVar("repo_sandbox_audit_call", default=None)
"""Set by the audit stage for the duration of a call; worker threads started with anyio inherit it."""


class TimeStamper:
    """Puts `ts` (UTC, ISO 8601 with milliseconds) first in the event."""

    __slots__ = ("_clock",)

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock

    def __call__(self, event: EventDict) -> EventDict:
        stamp = datetime.fromtimestamp(self._clock(), UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {"ts": stamp, **event}


def build_processors(*, redact: bool, max_value_chars: int, known: KnownSecrets | None = None) -> list[Processor]:
    """The chain a time-stamped event goes through, in order; the JSON rendering and the sink come after it.
    (`TimeStamper` runs first, when the event happens; these run later, on the writer thread.)"""
    from repo_sandbox.audit.redact import (  # the redaction rules load when an audit log is written
        CapValues,
        MaskSecretStrings,
        RedactSensitiveKeys,
        mask_partial_ids,
        shorten_home_paths,
    )

    chain: list[Processor] = []
    if redact:
        chain += [RedactSensitiveKeys(known), mask_partial_ids, MaskSecretStrings(known), shorten_home_paths]
    chain.append(CapValues(max_value_chars))
    return chain


def render_json(event: EventDict) -> str:
    """One line of JSONL (no newline inside: JSON escapes them)."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)


Outcome = Literal["ok", "error", "cancelled", "input_required"]
"""`input_required`: a 2026-07-28 round that paused for the user's answer; the retry is a call of its own."""


def call_event(
    *,
    session: str,
    request_id: str | None,
    tool: str,
    arguments: Any,
    outcome: Outcome,
    error_code: str | None,
    error_category: str | None,
    duration_ms: float,
    output_bytes: int,
    sandbox: str | None = None,
    redactions: int | None = None,
) -> EventDict:
    """The record of one finished tool call. Error messages are left out: they may quote the caller's data."""
    event: EventDict = {
        "event": CALL_EVENT,
        "session": session,
        "request_id": request_id,
        "tool": tool,
        "arguments": arguments,
        "outcome": outcome,
        "error_code": error_code,
        "error_category": error_category,
        "duration_ms": round(duration_ms, 3),
        "output_bytes": output_bytes,
    }
    if sandbox is not None:
        event["sandbox"] = sandbox
    if redactions is not None:
        event["redactions"] = redactions
    return event


def decision_event(
    kind: str,
    *,
    decision: str,
    rule: str | None,
    scope: CallScope | None,
    details: Mapping[str, Any],
) -> EventDict:
    """The record of one policy decision, tied to the call it was made in (when there is one)."""
    return {
        "event": DECISION_EVENT,
        "session": scope.session if scope else None,
        "request_id": scope.request_id if scope else None,
        "tool": scope.tool if scope else None,
        "kind": kind,
        "decision": decision,
        "rule": rule,
        "details": dict(details),
    }
