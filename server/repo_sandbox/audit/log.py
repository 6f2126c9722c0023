"""`AuditLog`: the audit trail of one workspace, and the API other code uses to write to it.

One per `Workspace` (`workspace.audit`), so every stage and tool body can reach it:

    workspace.audit.decision("command_denied", rule="exec.allow", program="curl")
    workspace.audit.decision("circuit_opened", decision="block", rule="guard.failure_threshold", failures=3)

`decision()` fills in session, request id and tool from the call being served (the audit stage sets
`events.CURRENT_CALL`; anyio worker threads inherit it). The details go through the same redaction as
everything else, so passing the caller's arguments is safe. Nothing here raises into a tool call, and
when the audit is off every method returns at once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TextIO

from repo_sandbox.audit.events import (
    CURRENT_CALL,
    Clock,
    Outcome,
    TimeStamper,
    build_processors,
    call_event,
    decision_event,
    render_json,
)
from repo_sandbox.audit.known import KnownSecrets
from repo_sandbox.audit.sink import AuditSink, BackgroundWriter, RotatingFileSink, StreamSink
from repo_sandbox.config.model import AuditConfig

if TYPE_CHECKING:
    from repo_sandbox.audit.redact import EventDict, Processor

Destination = Literal["off", "stderr", "file"]


class AuditLog:
    """Time-stamps events on the caller's thread, then redacts, renders and writes them on the writer thread."""

    def __init__(self, config: AuditConfig, *, clock: Clock = time.time, stream: TextIO | None = None) -> None:
        self.config = config
        self.destination: Destination = "off" if not config.path else "stderr" if config.path == "-" else "file"
        self.known_secrets = KnownSecrets()
        """Secret values seen in results or events; masked wherever they appear again (memory only)."""
        self._stamp = TimeStamper(clock)
        self._processors: list[Processor] = []
        self._sink: AuditSink | None = None
        self._writer: BackgroundWriter | None = None
        if self.destination != "off":
            self._processors = build_processors(
                redact=config.redact, max_value_chars=config.max_value_chars, known=self.known_secrets
            )
            if self.destination == "stderr":
                self._sink = StreamSink(stream)
            else:
                self._sink = RotatingFileSink(config.path, max_bytes=config.max_bytes, backup_count=config.backup_count)
            self._writer = BackgroundWriter(self._sink, self._prepare, queue_size=config.queue_size)

    @classmethod
    def disabled(cls) -> AuditLog:
        return cls(AuditConfig())

    @property
    def enabled(self) -> bool:
        return self._writer is not None

    def _prepare(self, event: EventDict) -> bytes:
        for processor in self._processors:
            event = processor(event)
        return (render_json(event) + "\n").encode("utf-8", "backslashreplace")

    def emit(self, event: EventDict) -> bool:
        """Queue one event (a JSON-able dict); False if the audit is off or the event was dropped. Never raises."""
        if self._writer is None:
            return False
        try:
            return self._writer.submit(self._stamp(event))
        except Exception:  # noqa: BLE001  # the audit must never break a call
            return False

    def record_call(
        self,
        *,
        session: str,
        request_id: str | None,
        tool: str,
        arguments: Any,
        outcome: Outcome,
        error_code: str | None = None,
        error_category: str | None = None,
        duration_ms: float,
        output_bytes: int,
        sandbox: str | None = None,
        redactions: int | None = None,
    ) -> bool:
        """One `tool_call` event (the audit stage calls this once per call)."""
        if self._writer is None:
            return False
        return self.emit(
            call_event(
                session=session,
                request_id=request_id,
                tool=tool,
                arguments=arguments,
                outcome=outcome,
                error_code=error_code,
                error_category=error_category,
                duration_ms=duration_ms,
                output_bytes=output_bytes,
                sandbox=sandbox,
                redactions=redactions,
            )
        )

    def decision(self, kind: str, *, decision: str = "deny", rule: str | None = None, **details: Any) -> bool:
        """One `policy_decision` event: what was decided (`decision`: deny, allow, ask, block, mask...), by
        which rule, with free-form details; tied to the current call when there is one."""
        if self._writer is None:
            return False
        return self.emit(decision_event(kind, decision=decision, rule=rule, scope=CURRENT_CALL.get(), details=details))

    def health(self) -> dict[str, Any]:
        """Counters for the status report: where events go, how many were written, dropped or failed, why."""
        report: dict[str, Any] = {
            "destination": self.destination,
            "path": self.config.path if self.destination == "file" else None,
            "redact": self.config.redact,
            "redact_output": self.config.redact_output,
        }
        if self._writer is None:
            return report | {"healthy": True}
        counters: Mapping[str, int] = self._writer.counters
        sink_stats = self._sink.stats() if self._sink is not None else {}
        return (
            report
            | dict(counters)
            | sink_stats
            | {
                "queue_depth": self._writer.queue_depth,
                "last_error": self._writer.last_error,
                "healthy": not self._writer.failing,
            }
        )

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued event is written; False on timeout."""
        return True if self._writer is None else self._writer.flush(timeout)

    def close(self, timeout: float = 5.0) -> bool:
        """Write what is queued and stop the writer thread; later events are dropped."""
        return True if self._writer is None else self._writer.close(timeout)
