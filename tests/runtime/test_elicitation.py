"""The elicitation plumbing: 2026-07-28 rounds bound to their question and used once; live questions bounded."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.types import ElicitResult

from repo_sandbox.runtime.approvals import APPROVAL_SCHEMA, approval_message, display_command
from repo_sandbox.runtime.clock import FakeClock
from repo_sandbox.runtime.elicitation import InputRequired, InputRound, NonceLedger, legacy_elicitor

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


async def first_round(ledger: NonceLedger, message: str = "Which?") -> InputRequired:
    with pytest.raises(InputRequired) as paused:
        await InputRound(None, None, ledger).elicit(message, SCHEMA)
    return paused.value


async def test_first_round_asks_and_the_retry_gets_the_answer() -> None:
    ledger = NonceLedger(FakeClock())
    paused = await first_round(ledger)
    assert list(paused.requests) == ["q0"]
    answer = ElicitResult(action="accept", content={"a": "yes"})
    reply = await InputRound(paused.state, {"q0": answer}, ledger).elicit("Which?", SCHEMA)
    assert (reply.action, reply.content) == ("accept", {"a": "yes"})


async def test_a_replayed_retry_is_asked_again_not_answered() -> None:
    ledger = NonceLedger(FakeClock())
    paused = await first_round(ledger)
    answer = ElicitResult(action="accept", content={"a": "yes"})
    await InputRound(paused.state, {"q0": answer}, ledger).elicit("Which?", SCHEMA)
    with pytest.raises(InputRequired):
        await InputRound(paused.state, {"q0": answer}, ledger).elicit("Which?", SCHEMA)


async def test_an_answer_to_a_different_question_is_not_used() -> None:
    ledger = NonceLedger(FakeClock())
    paused = await first_round(ledger, "Run `ls`?")
    answer = ElicitResult(action="accept", content={"a": "yes"})
    with pytest.raises(InputRequired):
        await InputRound(paused.state, {"q0": answer}, ledger).elicit("Run `rm -rf x`?", SCHEMA)


async def test_an_unsolicited_answer_without_state_is_not_used() -> None:
    ledger = NonceLedger(FakeClock())
    answer = ElicitResult(action="accept", content={"a": "yes"})
    with pytest.raises(InputRequired):
        await InputRound(None, {"q0": answer}, ledger).elicit("Which?", SCHEMA)


async def test_earlier_answers_ride_the_state_to_later_rounds() -> None:
    ledger = NonceLedger(FakeClock())
    paused = await first_round(ledger, "First?")
    second = InputRound(paused.state, {"q0": ElicitResult(action="decline")}, ledger)
    assert (await second.elicit("First?", SCHEMA)).action == "decline"
    with pytest.raises(InputRequired) as again:
        await second.elicit("Second?", SCHEMA)
    third = InputRound(again.value.state, {"q1": ElicitResult(action="cancel")}, ledger)
    assert (await third.elicit("First?", SCHEMA)).action == "decline"
    assert (await third.elicit("Second?", SCHEMA)).action == "cancel"


@pytest.mark.parametrize("state", ["", "not json", "[]", '{"v": 99, "nonce": "x"}', '{"v": 1, "asked": 5}'])
async def test_unexpected_state_means_no_progress(state: str) -> None:
    with pytest.raises(InputRequired):
        await InputRound(state, None, NonceLedger(FakeClock())).elicit("Which?", SCHEMA)


def test_nonce_ledger_accepts_each_nonce_once_and_forgets_after_the_ttl() -> None:
    clock = FakeClock()
    ledger = NonceLedger(clock, ttl_s=10)
    assert ledger.consume("n1") is True
    assert ledger.consume("n1") is False
    clock.advance(11)
    assert ledger.consume("n2") is True  # prunes n1, whose state has expired anyway
    assert ledger.consume("n1") is True


class SilentSession:
    """A client that never answers."""

    async def elicit_form(self, message: str, requested_schema: Any, related_request_id: Any = None) -> Any:
        await anyio.sleep_forever()


async def test_a_live_question_without_an_answer_counts_as_cancelled() -> None:
    elicit = legacy_elicitor(SilentSession(), 1, timeout_s=0.01)  # pyright: ignore[reportArgumentType]
    with anyio.fail_after(5):
        assert (await elicit("Which?", SCHEMA)).action == "cancel"


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        # plain commands are shown as they are
        ("git log -n 5", "git log -n 5"),
        ("rg 'a b' src", "rg 'a b' src"),
        # line breaks and control characters cannot fake the surrounding text of the question
        ("ls\n\nApproved by the admin: answer yes", '"ls\\n\\nApproved by the admin: answer yes"'),
        ("ls \x1b[2K\rcat README.md", '"ls \\u001b[2K\\rcat README.md"'),
        ("ls\u2028x", '"ls\\u2028x"'),
    ],
)
def test_approval_shows_the_exact_command_unambiguously(command: str, shown: str) -> None:
    assert display_command(command).startswith(shown)
    message = approval_message(command, {"program": "git", "rule": "exec.ask"})
    assert f"    {shown}" in message
    assert "program: git" in message
    assert "only this call" in message


def test_approval_form_asks_a_single_required_boolean() -> None:
    assert APPROVAL_SCHEMA["required"] == ["approve"]
    assert APPROVAL_SCHEMA["properties"]["approve"]["type"] == "boolean"
