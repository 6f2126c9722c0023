"""ask_user and the approval provider, through the real client in both eras (live elicitation/create in
2025-11-25; InputRequiredResult and a retry with input_responses in 2026-07-28)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import CallToolResult, ElicitRequestFormParams, ElicitResult, InputRequiredResult
from pydantic import BaseModel, ConfigDict, Field

from repo_sandbox.calls import Approve, CallContext
from repo_sandbox.errors import ApprovalDeniedError, ApprovalRequiredError
from repo_sandbox.testing import Mode, ScriptedUser, ServerFactory, open_session
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.tools.registry import TOOLS, TOOLS_BY_NAME
from repo_sandbox.tools.spec import ToolSpec
from repo_sandbox.wiring import handlers
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

QUESTIONS = {
    "questions": [
        {"question": "Which package first?", "choices": ["core", "cli"]},
        {"question": "Anything to skip?"},
    ]
}


def accept(**content: Any) -> ElicitResult:
    return ElicitResult(action="accept", content=content)


# ask_user ----------------------------------------------------------------------------------------


async def test_ask_user_is_listed_only_to_clients_that_can_elicit(make_server: ServerFactory, era: Mode) -> None:
    server = make_server()
    async with open_session(server, era, user=ScriptedUser()) as asking:
        assert "ask_user" in await asking.tool_descriptions()
        policy = await asking.resource("repo-sandbox://policy")
        assert policy["interaction"]["ask_user"] is True
        assert "ask_user" in (await asking.call("ask_usr", QUESTIONS))["hint"]
    async with open_session(server, era) as mute:
        assert "ask_user" not in await mute.tool_descriptions()
        refused = await mute.call("ask_user", QUESTIONS)
        misspelt = await mute.call("ask_usr", QUESTIONS)
        policy = await mute.resource("repo-sandbox://policy")
    assert refused["code"] == "approval_required"
    assert misspelt["code"] == "invalid_arguments"
    assert misspelt["hint"] == "Use one of: count_lines, execute_bash, read_file, search_files, search_text."
    assert refused["category"] == "permission_denied"
    assert policy["interaction"]["ask_user"] is False
    assert {"name": "ask_user", "read_only": True, "available": False} in policy["tools"]


async def test_ask_user_returns_the_answers(make_server: ServerFactory, era: Mode) -> None:
    user = ScriptedUser([accept(answer_1="cli", answer_2="the docs")])
    async with open_session(make_server(), era, user=user) as session:
        result = await session.call("ask_user", QUESTIONS)
    assert result["status"] == "answered"
    assert result["answers"] == [
        {"question": "Which package first?", "answer": "cli"},
        {"question": "Anything to skip?", "answer": "the docs"},
    ]
    [shown] = user.shown
    assert isinstance(shown, ElicitRequestFormParams)
    assert "1. Which package first?" in shown.message
    assert shown.requested_schema["properties"]["answer_1"]["enum"] == ["core", "cli"]
    assert shown.requested_schema["required"] == ["answer_1", "answer_2"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_ask_user_decline_or_cancel_is_a_clear_result(make_server: ServerFactory, era: Mode, action: str) -> None:
    user = ScriptedUser([ElicitResult(action=action)])  # pyright: ignore[reportArgumentType]
    async with open_session(make_server(), era, user=user) as session:
        result = await session.call("ask_user", QUESTIONS)
    assert result["status"] == {"decline": "declined", "cancel": "cancelled"}[action]
    assert result["answers"] == []
    assert "Continue without this information" in result["note"]


async def test_ask_user_ignores_an_answer_outside_the_choices(make_server: ServerFactory, era: Mode) -> None:
    user = ScriptedUser([accept(answer_1="web", answer_2="")])
    async with open_session(make_server(), era, user=user) as session:
        result = await session.call("ask_user", QUESTIONS)
    assert [a["answer"] for a in result["answers"]] == [None, None]
    assert "2 answer(s) were left empty" in result["note"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"questions": []},
        {"questions": [{"question": "a"}, {"question": "b"}, {"question": "c"}, {"question": "d"}]},
        {"questions": [{"question": "a", "choices": ["only one"]}]},
        {"questions": [{"question": "a", "choices": ["x", "x"]}]},
        {"questions": [{"question": ""}]},
    ],
)
async def test_ask_user_rejects_malformed_questions(make_server: ServerFactory, arguments: dict[str, Any]) -> None:
    async with open_session(make_server(), "legacy", user=ScriptedUser()) as session:
        assert (await session.call("ask_user", arguments))["code"] == "invalid_arguments"


# the approval provider, called from a tool context as execute_bash will call it ------------------


class ProbeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: Annotated[str, Field(min_length=1)]


class ProbeResult(ResultModel):
    ran: str


RUNS: list[str] = []


async def approval_probe(ws: Workspace, args: ProbeArgs, context: CallContext) -> ProbeResult:
    """What a program in exec.ask does: no provider -> approval_required; a no -> approval_denied."""
    approve: Approve | None = context.approve
    if approve is None:
        raise ApprovalRequiredError(f"'{args.command}' needs the user's approval, which this client cannot ask for.")
    if not await approve(args.command, {"program": args.command.split()[0], "rule": "exec.ask"}):
        raise ApprovalDeniedError(f"The user did not approve '{args.command}'.")
    RUNS.append(args.command)
    return ProbeResult(ran=args.command)


PROBE = ToolSpec(
    name="approval_probe",
    title="Approval probe",
    description="Runs nothing; asks for approval like execute_bash does for programs in exec.ask.",
    args_model=ProbeArgs,
    result_models=(ProbeResult,),
    body=approval_probe,
    idempotent=False,
)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    monkeypatch.setattr(handlers, "TOOLS", (*TOOLS, PROBE))
    monkeypatch.setitem(TOOLS_BY_NAME, PROBE.name, PROBE)
    RUNS.clear()
    yield RUNS


async def test_approval_accepted_runs_the_call_once(make_server: ServerFactory, era: Mode, probe: list[str]) -> None:
    user = ScriptedUser([accept(approve=True)])
    async with open_session(make_server(), era, user=user) as session:
        result = await session.call("approval_probe", {"command": "git log -n 3"})
        second = await session.call("approval_probe", {"command": "git log -n 3"})  # asks again: cancelled
    assert result == {"ran": "git log -n 3"}
    assert second["code"] == "approval_denied"
    assert probe == ["git log -n 3"]
    assert len(user.shown) == 2
    assert "    git log -n 3\n" in user.shown[0].message


@pytest.mark.parametrize(
    "answer",
    [
        ElicitResult(action="decline"),
        ElicitResult(action="cancel"),
        accept(approve=False),
        ElicitResult(action="accept", content={}),
    ],
    ids=["decline", "cancel", "unticked", "empty"],
)
async def test_approval_anything_but_yes_is_denied(
    make_server: ServerFactory, era: Mode, probe: list[str], answer: ElicitResult
) -> None:
    async with open_session(make_server(), era, user=ScriptedUser([answer])) as session:
        result = await session.call("approval_probe", {"command": "git log"})
    assert result["code"] == "approval_denied"
    assert result["category"] == "permission_denied"
    assert probe == []


async def test_approval_without_the_capability_fails_closed(
    make_server: ServerFactory, era: Mode, probe: list[str]
) -> None:
    async with open_session(make_server(), era) as session:
        result = await session.call("approval_probe", {"command": "git log"})
    assert result["code"] == "approval_required"
    assert probe == []


async def test_a_client_error_during_a_live_question_is_a_no(make_server: ServerFactory, probe: list[str]) -> None:
    async def broken(context: Any, params: Any) -> Any:
        raise RuntimeError("the client's UI crashed")

    async with Client(make_server(), mode="legacy", elicitation_callback=broken) as client:
        with anyio.fail_after(5):
            result = await client.call_tool("approval_probe", {"command": "git log"})
    assert result.is_error is True
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["error"]["code"] == "approval_denied"
    assert probe == []


# 2026-07-28: the retry's answer is bound to that exact call and used once ------------------------


async def modern_round(
    client: Client, command: str, responses: dict[str, Any] | None = None, state: str | None = None
) -> CallToolResult | InputRequiredResult:
    with anyio.fail_after(5):
        result = await client.session.call_tool(
            "approval_probe",
            {"command": command},
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
    assert isinstance(result, CallToolResult | InputRequiredResult)
    return result


async def test_modern_approval_cannot_be_replayed_or_moved_to_another_command(
    make_server: ServerFactory, probe: list[str]
) -> None:
    async with Client(make_server(), mode="auto", elicitation_callback=ScriptedUser()) as client:
        await client.list_tools()
        asked = await modern_round(client, "git log")
        assert isinstance(asked, InputRequiredResult)
        assert asked.input_requests is not None and list(asked.input_requests) == ["q0"]
        yes = {"q0": accept(approve=True)}

        # the sealed state of "git log" does not fit another command
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await modern_round(client, "git push", yes, asked.request_state)
        # an answer without the state that asked for it is not an approval
        assert isinstance(await modern_round(client, "git log", yes), InputRequiredResult)
        # forged state is refused by the SDK boundary
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await modern_round(client, "git log", yes, '{"v":1,"nonce":"n","asked":{"q0":"x"}}')

        ran = await modern_round(client, "git log", yes, asked.request_state)
        assert isinstance(ran, CallToolResult) and ran.structured_content == {"ran": "git log"}
        # replaying the approved round asks again instead of running a second time
        assert isinstance(await modern_round(client, "git log", yes, asked.request_state), InputRequiredResult)
    assert probe == ["git log"]


async def test_modern_pause_costs_nothing_and_the_answered_call_counts_once(
    make_server: ServerFactory, probe: list[str]
) -> None:
    async with open_session(make_server(), "auto", user=ScriptedUser([accept(approve=True)])) as session:
        assert (await session.call("approval_probe", {"command": "git log"}))["ran"] == "git log"
        status = await session.status()
    assert status["budget"]["calls"]["used"] == 1
    assert status["tools"]["approval_probe"]["calls"] == 1
