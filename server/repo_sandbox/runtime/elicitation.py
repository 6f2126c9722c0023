"""Asking the human through the client (MCP elicitation), the same way in both protocol eras.

Tools and stages see one function, `await elicit(message, requested_schema) -> ElicitAnswer`, found in
`CallContext.elicit` only when the client can show a form to its user:
- 2025-11-25 and older (handshake era): a live `elicitation/create` request on the back-channel, bounded by
  `ELICIT_TIMEOUT_S` (no answer in time counts as "cancel");
- 2026-07-28: the call *pauses*: `elicit` raises `InputRequired`, which the tools/call handler turns into an
  `InputRequiredResult`; the client asks its user and retries the same call with `input_responses` and the
  echoed `request_state`. The body runs again from the start and this time `elicit` returns the answer.

How a retry's answer is bound to its question (the SDK's `Resolve`/`Elicit` mechanism, replicated for our
low-level handler): the `request_state` we emit is sealed by the SDK's `RequestStateBoundary` (AES-GCM, expiry,
bound to the method, the tool name and a digest of the exact arguments), so it cannot be forged or moved to
another call; inside it we record a digest of each question asked, and an answer counts only for the question
with that digest; each state carries a nonce that is accepted once (`NonceLedger`), so a replayed retry does
not reuse an answer (it is asked again).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final, Literal

import anyio
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequest
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from repo_sandbox.calls import Elicit, ElicitAction, ElicitAnswer
from repo_sandbox.runtime.clock import Clock

logger = logging.getLogger("repo_sandbox")


ELICIT_TIMEOUT_S: Final = 600.0
"""How long a live (handshake-era) question waits for the user before it counts as cancelled."""

STATE_TTL_S: Final = 600.0
"""How long a request-state nonce is remembered (the SDK's request-state TTL)."""

INPUT_REQUIRED_VERSION: Final = "2026-07-28"
_STATE_VERSION: Final = 1


class InputRequired(BaseException):  # a control-flow signal, like cancellation, not an error
    """The call must pause for the user's answer (2026-07-28); carries the questions and the state to echo.

    A BaseException so that the pipeline, which grades every `Exception`, lets it through to the handler.
    """

    def __init__(self, requests: dict[str, InputRequest], state: str) -> None:
        super().__init__("input required")
        self.requests = requests
        self.state = state


def client_can_elicit(session: ServerSession) -> bool:
    """The client declared form elicitation (a bare `elicitation: {}` counts as form support)."""
    capabilities = session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def uses_input_required(protocol_version: str | None) -> bool:
    return protocol_version is not None and is_version_at_least(protocol_version, INPUT_REQUIRED_VERSION)


def can_ask_user(session: ServerSession, protocol_version: str | None) -> bool:
    """The client can show a question to its user in this era (a live request needs a back-channel)."""
    if not client_can_elicit(session):
        return False
    return uses_input_required(protocol_version) or session.can_send_request


def legacy_elicitor(session: ServerSession, request_id: Any, *, timeout_s: float = ELICIT_TIMEOUT_S) -> Elicit:
    """Live `elicitation/create` on the back-channel of a handshake-era connection."""

    async def elicit(message: str, requested_schema: dict[str, Any]) -> ElicitAnswer:
        with anyio.move_on_after(timeout_s):
            try:
                result = await session.elicit_form(message, requested_schema, related_request_id=request_id)
            except (MCPError, NoBackChannelError) as exc:
                logger.info("elicitation failed (%s); treated as cancelled", type(exc).__name__)
                return ElicitAnswer("cancel")
            return ElicitAnswer(result.action, result.content)
        logger.info("elicitation got no answer within %.0f s; treated as cancelled", timeout_s)
        return ElicitAnswer("cancel")

    return elicit


class NonceLedger:
    """Request-state nonces already used; each is accepted once while it could still be valid."""

    def __init__(self, clock: Clock, ttl_s: float = STATE_TTL_S, max_entries: int = 100_000) -> None:
        self._clock = clock
        self._ttl = ttl_s
        self._max = max_entries
        self._used: OrderedDict[str, float] = OrderedDict()

    def consume(self, nonce: str) -> bool:
        """True the first time `nonce` is seen (within the TTL), False for a replay."""
        now = self._clock.now()
        while self._used and (next(iter(self._used.values())) < now or len(self._used) >= self._max):
            self._used.popitem(last=False)
        if nonce in self._used:
            return False
        self._used[nonce] = now + self._ttl
        return True


def question_digest(message: str, requested_schema: dict[str, Any]) -> str:
    rendered = json.dumps([message, requested_schema], sort_keys=True, separators=(",", ":"))
    return base64.urlsafe_b64encode(hashlib.sha256(rendered.encode()).digest()[:16]).decode().rstrip("=")


class InputRound:
    """One round of a 2026-07-28 tools/call: answers restored from the state and the retry's responses."""

    def __init__(
        self, request_state: str | None, input_responses: Mapping[str, Any] | None, ledger: NonceLedger
    ) -> None:
        state = _decode_state(request_state)
        if state.nonce is not None and not ledger.consume(state.nonce):
            logger.info("request_state replayed; its answers are ignored and the questions asked again")
            state, input_responses = _State(), None
        self._asked = state.asked
        self._answers = state.answers
        self._responses = dict(input_responses or {})
        self._next = 0

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> ElicitAnswer:
        key = f"q{self._next}"
        self._next += 1
        digest = question_digest(message, requested_schema)
        recorded = self._answers.get(key)
        if recorded is not None and recorded.q == digest:
            return ElicitAnswer(recorded.action, recorded.content)
        response = self._responses.get(key)
        if isinstance(response, ElicitResult) and self._asked.get(key) == digest:
            self._answers[key] = _Recorded(q=digest, action=response.action, content=response.content)
            return ElicitAnswer(response.action, response.content)
        request = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=requested_schema))
        raise InputRequired({key: request}, _encode_state({key: digest}, self._answers))


def elicitor_for(
    session: ServerSession,
    protocol_version: str | None,
    request_id: Any,
    *,
    request_state: str | None,
    input_responses: Mapping[str, Any] | None,
    ledger: NonceLedger,
) -> Elicit | None:
    """The `elicit` function for this call, or None when the client cannot show questions to its user."""
    if not can_ask_user(session, protocol_version):
        return None
    if uses_input_required(protocol_version):
        return InputRound(request_state, input_responses, ledger).elicit
    return legacy_elicitor(session, request_id)


class _Recorded(BaseModel):
    q: str
    """Digest of the question this answers."""
    action: ElicitAction
    content: dict[str, Any] | None = None


class _State(BaseModel):
    """Our plaintext inside the sealed request_state."""

    v: Literal[1] = _STATE_VERSION
    nonce: str | None = None
    asked: dict[str, str] = Field(default_factory=dict[str, str])
    answers: dict[str, _Recorded] = Field(default_factory=dict[str, _Recorded])


def _encode_state(asked: dict[str, str], answers: dict[str, _Recorded]) -> str:
    state = _State(nonce=secrets.token_urlsafe(16), asked=asked, answers=answers)
    return json.dumps(state.model_dump(mode="json"), separators=(",", ":"))


def _decode_state(request_state: str | None) -> _State:
    """The state is plaintext the boundary already verified as ours; anything unexpected means "no progress"."""
    if not request_state:
        return _State()
    try:
        return _State.model_validate(json.loads(request_state))
    except ValueError:  # includes pydantic's ValidationError
        return _State()
