"""The two pipeline stages of the audit: `AuditStage` (outermost) and `OutputMaskingStage` (innermost).

`AuditStage` sees every outcome, including refusals by the stages inside it, and writes one `tool_call`
event per call; while the call runs it publishes the call in `events.CURRENT_CALL` so that inner code can
record policy decisions with `workspace.audit.decision(...)`.

`OutputMaskingStage` sits right around the tool body: it masks recognised secrets in the text fields of
the result (`output.OUTPUT_MASKERS`) and in error payloads, and reports the count as `redactions` when the
tool's result model declares that field. A failure while masking fails the call (`internal_error`): an
unmasked result never goes out because masking broke.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from typing import Any

import anyio

from repo_sandbox.audit.events import CURRENT_CALL, CallScope, Outcome
from repo_sandbox.audit.log import AuditLog
from repo_sandbox.audit.output import OUTPUT_MASKERS, TextMasker, mask_error, mask_strings
from repo_sandbox.runtime.elicitation import InputRequired
from repo_sandbox.runtime.pipeline import CallOutcome, Handler, ToolCall
from repo_sandbox.tools.spec import ToolSpec
from repo_sandbox.workspace import Workspace


class AuditStage:
    """Records one `tool_call` event per call, whatever its outcome."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        scope = CallScope(call.context.session_id, call.context.request_id, call.tool)
        token = CURRENT_CALL.set(scope)
        try:
            outcome = await call_next(call)
        except InputRequired:
            self._record(call, None, ended="input_required")
            raise
        except BaseException:
            self._record(call, None)
            raise
        finally:
            CURRENT_CALL.reset(token)
        self._record(call, outcome)
        return outcome

    def _record(self, call: ToolCall, outcome: CallOutcome | None, ended: Outcome = "cancelled") -> None:
        """`ended`: why a call without an outcome stopped (the client gave up or the server is shutting
        down; or, 2026-07-28, it paused for the user's answer)."""
        try:
            if outcome is None:
                self.audit.record_call(
                    session=call.context.session_id,
                    request_id=call.context.request_id,
                    tool=call.tool,
                    arguments=call.arguments,
                    outcome=ended,
                    duration_ms=(time.perf_counter() - call.started) * 1000,
                    output_bytes=0,
                )
                return
            payload = outcome.payload
            error = payload.get("error") if outcome.is_error else None
            sandbox = payload.get("sandbox")
            redactions = payload.get("redactions")
            self.audit.record_call(
                session=call.context.session_id,
                request_id=call.context.request_id,
                tool=call.tool,
                arguments=call.arguments,
                outcome="error" if outcome.is_error else "ok",
                error_code=error.get("code") if isinstance(error, dict) else None,  # pyright: ignore[reportUnknownMemberType]
                error_category=error.get("category") if isinstance(error, dict) else None,  # pyright: ignore[reportUnknownMemberType]
                duration_ms=outcome.duration_ms,
                output_bytes=outcome.json_bytes(),
                sandbox=sandbox if isinstance(sandbox, str) else None,
                redactions=redactions if isinstance(redactions, int) else None,
            )
        except Exception:  # noqa: BLE001, S110  # the audit never breaks a call; AuditLog counts its own failures
            pass


INLINE_CHARS = 16_384
"""Results with less text than this are masked on the event loop; larger ones in a worker thread."""


def _larger_than(value: Any, limit: int) -> bool:
    """Whether the strings in a JSON-like value add up to more than `limit` characters (stops early)."""
    budget = limit
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            budget -= len(item)
            if budget < 0:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
        elif isinstance(item, list):
            stack.extend(item)  # pyright: ignore[reportUnknownArgumentType]
    return False


@functools.cache
def _reports_redactions(spec: ToolSpec | None) -> bool:
    return spec is not None and all("redactions" in model.model_fields for model in spec.result_models)


class OutputMaskingStage:
    """Masks recognised secrets in results before they reach the model."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        outcome = await call_next(call)
        masker = None if outcome.is_error else OUTPUT_MASKERS.get(outcome.tool)
        if masker is None and not outcome.is_error:
            return outcome
        if _larger_than(outcome.payload, INLINE_CHARS):
            payload, counts = await anyio.to_thread.run_sync(self._mask, outcome, call.arguments)
        else:  # a thread hop would cost more than masking a small result
            payload, counts = self._mask(outcome, call.arguments)
        total = sum(counts.values())
        if total:
            self.workspace.audit.decision(
                "output_masked", decision="mask", rule="audit.redact_output", redactions=total, kinds=sorted(counts)
            )
        if not outcome.is_error and _reports_redactions(call.spec):
            payload["redactions"] = total
        return CallOutcome(outcome.tool, payload, outcome.is_error, outcome.duration_ms)

    def _mask(self, outcome: CallOutcome, arguments: Any) -> tuple[dict[str, Any], Counter[str]]:
        known = self.workspace.audit.known_secrets
        mask = TextMasker(known)
        payload = _copy(outcome.payload)
        if outcome.is_error:
            mask_error(payload, mask)
        else:
            OUTPUT_MASKERS[outcome.tool](self.workspace, payload, arguments, mask)
        if mask.found - set(known.snapshot()):  # new secrets: mask their other, bare occurrences in this result too
            known.add(mask.found)
            payload = mask_strings(payload, lambda text: known.mask(text, mask.counts))
        return payload, mask.counts


def _copy(value: Any) -> Any:
    """A deep copy of a JSON-like payload (the masked result must not alias the body's objects)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_copy(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value
