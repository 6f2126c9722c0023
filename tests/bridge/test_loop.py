"""The tool loop against a scripted model on a real HTTP server: history, parallel calls, graded errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_openai import ScriptedChatServer, answer, error, tool_calls

from conftest import ClientFactory
from repo_sandbox.bridge.errors import MaxRoundsExceededError
from repo_sandbox.bridge.loop import ToolCallRecord, ToolLoop, decode_arguments, run_tool_loop
from repo_sandbox.bridge.openai import openai_tools
from repo_sandbox.config.model import Settings
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.runtime.pipeline import CallOutcome, CallPipeline, Handler, ToolCall
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

QUESTION = [{"role": "system", "content": "You read code."}, {"role": "user", "content": "What does this repo do?"}]


def tool_content(message: dict[str, Any]) -> Any:
    """A graded error as the JSON object the model reads."""
    assert message["role"] == "tool"
    return json.loads(message["content"])


def tool_text(message: dict[str, Any]) -> str:
    """A result as the model reads it: the compact rendering, as an MCP client's model gets it."""
    assert message["role"] == "tool"
    return message["content"]


async def test_a_turn_of_parallel_calls_then_an_answer_sends_the_whole_history(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    chat_server.add(
        tool_calls(
            ("call_1", "search_files", {"pattern": "**/*.go"}),
            ("call_2", "read_file", {"path": "README.md", "line_numbers": False}),
            content="Let me look.",
        ),
        answer("A small Go service with two commands."),
    )
    async with make_client() as client:
        with anyio.fail_after(20):
            transcript = await run_tool_loop(QUESTION, client=client, workspace=go_workspace)
    assert transcript.answer == "A small Go service with two commands."
    assert transcript.finish_reason == "stop" and transcript.rounds == 2
    assert transcript.usage == {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
    first, second = chat_server.bodies
    assert first["tools"] == openai_tools() and first["tool_choice"] == "auto"
    assert first["messages"] == QUESTION
    assert second["tools"] == openai_tools() and second["tool_choice"] == "auto"
    history = second["messages"]
    assert history[:2] == QUESTION
    assert history[2] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_files", "arguments": '{"pattern": "**/*.go"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "README.md", "line_numbers": false}'},
            },
        ],
    }
    assert [(m["role"], m["tool_call_id"]) for m in history[3:]] == [("tool", "call_1"), ("tool", "call_2")]
    assert tool_text(history[3]) == "cmd/tool/main.go\ninternal/repo/repo.go\nmain.go\n"
    assert tool_text(history[4]) == "# Demo\n\nA small Go service.\n"
    assert len(history) == 5
    assert transcript.messages == [*history, {"role": "assistant", "content": "A small Go service with two commands."}]
    assert [(r.round, r.id, r.name, r.is_error) for r in transcript.tool_calls] == [
        (1, "call_1", "search_files", False),
        (1, "call_2", "read_file", False),
    ]
    json.dumps(transcript.to_json())  # the transcript is plain JSON


async def test_graded_errors_go_back_to_the_model_as_the_tool_message(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    chat_server.add(
        tool_calls(("c1", "read_file", {"path": "/etc/passwd"})),
        tool_calls(("c2", "read_file", {"path": ".env"})),
        answer("I may not read those."),
    )
    async with make_client() as client:
        with anyio.fail_after(20):
            transcript = await run_tool_loop(QUESTION, client=client, workspace=go_workspace)
    assert transcript.answer == "I may not read those."
    outside = tool_content(chat_server.bodies[1]["messages"][-1])
    assert outside["error"]["code"] == "path_outside_root" and outside["error"]["category"] == "permission_denied"
    denied = tool_content(chat_server.bodies[2]["messages"][-1])
    assert denied["error"]["code"] == "path_denied"
    assert "sk-should-never-leak" not in json.dumps(chat_server.bodies)
    assert [(r.error_code, r.is_error) for r in transcript.tool_calls] == [
        ("path_outside_root", True),
        ("path_denied", True),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        # malformed argument JSON: named as such, with the position
        ("read_file", '{"path": "README.md"', "The arguments of read_file are not valid JSON: Expecting ',' delimiter"),
        ("read_file", "{'path': 'README.md'}", "not valid JSON: Expecting property name enclosed in double quotes"),
        ("search_files", '{"pattern": "*.go"} trailing', "not valid JSON: Extra data (line 1, column 21)"),
        # JSON that is not an object
        ("read_file", '["README.md"]', "Arguments must be a JSON object."),
        ("read_file", '"README.md"', "Arguments must be a JSON object."),
        # unknown tools
        ("write_file", '{"path": "x", "content": "y"}', "Unknown tool 'write_file'."),
        ("", "{}", "Unknown tool ''."),
        ("read_file; rm -rf /", "{}", "Unknown tool 'read_file; rm -rf /'."),
        # schema violations
        ("read_file", '{"path": "README.md", "limit": 0}', "Invalid arguments for read_file: 'limit'"),
        ("read_file", "{}", "Invalid arguments for read_file: 'path': required."),
    ],
)
async def test_bad_calls_become_invalid_arguments_fed_back_to_the_model(
    chat_server: ScriptedChatServer,
    make_client: ClientFactory,
    go_workspace: Workspace,
    name: str,
    arguments: str,
    message: str,
) -> None:
    chat_server.add(tool_calls(("bad", name, arguments)), answer("Recovered."))
    async with make_client() as client:
        with anyio.fail_after(20):
            transcript = await run_tool_loop(QUESTION, client=client, workspace=go_workspace)
    assert transcript.answer == "Recovered."
    sent = chat_server.bodies[1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"] == {"name": name, "arguments": arguments}
    assert sent[-1]["tool_call_id"] == "bad"
    payload = tool_content(sent[-1])
    assert payload["error"]["code"] == "invalid_arguments"
    assert payload["error"]["category"] == "invalid_argument"
    assert message in payload["error"]["message"]
    assert transcript.tool_calls[0].error_code == "invalid_arguments"


async def test_empty_arguments_count_as_an_empty_object(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    chat_server.add(tool_calls(("c", "count_lines", "")), answer("Counted."))
    async with make_client() as client:
        with anyio.fail_after(20):
            await run_tool_loop(QUESTION, client=client, workspace=go_workspace)
    assert " lines in 6 files (" in tool_text(chat_server.bodies[1]["messages"][-1]).split("\n")[0]


async def test_the_loop_survives_a_429_and_a_500_between_turns(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    chat_server.add(
        error(429, "slow down", {"Retry-After": "0"}),
        tool_calls(("c1", "count_lines", {"path": ".", "pattern": "*.go"})),
        error(500, "oops"),
        answer("19 lines of Go."),
    )
    async with make_client() as client:
        with anyio.fail_after(20):
            transcript = await run_tool_loop(QUESTION, client=client, workspace=go_workspace)
    assert transcript.answer == "19 lines of Go." and transcript.rounds == 2
    bodies = chat_server.bodies
    assert len(bodies) == 4 and bodies[0] == bodies[1] and bodies[2] == bodies[3]
    assert tool_text(bodies[3]["messages"][-1]).startswith("19 lines in ")


async def test_exceeding_max_rounds_raises_with_the_transcript_and_skips_the_last_calls(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    for index in range(3):
        chat_server.add(tool_calls((f"c{index}", "search_files", {"pattern": f"*.{index}"})))
    chat_server.add(answer("never reached"))
    async with make_client() as client:
        with anyio.fail_after(20), pytest.raises(MaxRoundsExceededError) as info:
            await run_tool_loop(QUESTION, 3, client=client, workspace=go_workspace)
    error_ = info.value
    assert error_.code == "max_rounds_exceeded" and error_.category == "limit_exceeded"
    assert error_.details == {"max_rounds": 3, "pending_tools": ["search_files"]}
    assert len(chat_server.requests) == 3 and chat_server.pending == 1
    transcript = error_.transcript
    assert transcript.rounds == 3 and transcript.answer is None
    assert [r.id for r in transcript.tool_calls] == ["c0", "c1"]  # the third turn's call was not run
    assert transcript.messages[-1]["tool_calls"][0]["id"] == "c2"


async def test_max_rounds_must_be_positive(make_client: ClientFactory, go_workspace: Workspace) -> None:
    async with make_client() as client:
        with pytest.raises(ValueError, match="at least 1"):
            await run_tool_loop(QUESTION, 0, client=client, workspace=go_workspace)


async def test_the_callers_messages_are_not_modified(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    chat_server.add(tool_calls(("c", "count_lines", {})), answer("ok"))
    messages = list(QUESTION)
    async with make_client() as client:
        with anyio.fail_after(20):
            await run_tool_loop(messages, client=client, workspace=go_workspace)
    assert messages == QUESTION


# the same pipeline as the MCP server --------------------------------------------------------------


def test_the_loop_runs_calls_through_the_servers_pipeline(make_client: ClientFactory, go_workspace: Workspace) -> None:
    loop = ToolLoop(make_client(), go_workspace)
    assert isinstance(loop.pipeline, CallPipeline)
    assert [type(stage) for stage in loop.pipeline.stages] == [
        type(stage) for stage in build_pipeline(go_workspace, TOOLS).stages
    ]
    assert loop.pipeline.workspace is go_workspace


async def test_the_operators_policy_applies_to_the_models_calls(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_repo: Path, make_settings: Callable[..., Settings]
) -> None:
    workspace = Workspace(make_settings(go_repo, workspace={"extra_deny": ["internal/"]}))
    try:
        chat_server.add(
            tool_calls(
                ("c1", "read_file", {"path": "internal/repo/repo.go"}), ("c2", "search_files", {"pattern": "*.go"})
            ),
            answer("done"),
        )
        async with make_client() as client:
            with anyio.fail_after(20):
                await run_tool_loop(QUESTION, client=client, workspace=workspace)
    finally:
        workspace.close()
    denied, listing = chat_server.bodies[1]["messages"][-2:]
    assert tool_content(denied)["error"]["code"] == "path_denied"
    assert tool_text(listing) == "cmd/tool/main.go\nmain.go\n"


async def test_the_model_is_offered_the_tools_under_the_operators_policy(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_repo: Path, make_settings: Callable[..., Settings]
) -> None:
    workspace = Workspace(make_settings(go_repo, workspace={"include_hidden": True}, exec={"enabled": False}))
    try:
        chat_server.add(answer("done"))
        async with make_client() as client:
            with anyio.fail_after(20):
                await run_tool_loop(QUESTION, client=client, workspace=workspace)
    finally:
        workspace.close()
    offered = {tool["function"]["name"]: tool["function"]["parameters"] for tool in chat_server.bodies[0]["tools"]}
    assert "execute_bash" not in offered
    assert offered["search_text"]["properties"]["include_hidden"]["default"] is True


class RecordingStage:
    """Records the session and request id of every call (what budget and breaker stages key on)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str]] = []

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        self.seen.append((call.context.session_id, call.context.request_id, call.tool))
        return await call_next(call)


async def test_one_loop_is_one_session_and_each_call_carries_its_tool_call_id(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    stage = RecordingStage()
    script = [tool_calls(("a1", "count_lines", {}), ("a2", "search_files", {"pattern": "*.md"})), answer("one")]
    chat_server.add(*script, *script)
    async with make_client() as client:
        loop = ToolLoop(client, go_workspace)
        loop.pipeline = CallPipeline(go_workspace, TOOLS, [stage])
        with anyio.fail_after(20):
            first = await loop.run_tool_loop(QUESTION)
            second = await loop.run_tool_loop(QUESTION, session_id="caller-chosen")
    assert first.session_id.startswith("bridge-") and second.session_id == "caller-chosen"
    assert sorted(stage.seen) == sorted(
        [
            (first.session_id, "a1", "count_lines"),
            (first.session_id, "a2", "search_files"),
            ("caller-chosen", "a1", "count_lines"),
            ("caller-chosen", "a2", "search_files"),
        ]
    )


class BarrierStage:
    """Holds the first call until every other one has finished: sequential execution would never finish."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.started = 0
        self.all_started = anyio.Event()
        self.others_finished = anyio.Event()
        self.finished: list[str | None] = []

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        self.started += 1
        if self.started == self.calls:
            self.all_started.set()
        if call.context.request_id == "p0":
            await self.all_started.wait()
            await self.others_finished.wait()  # however slow the machine, the others finish first
        outcome = await call_next(call)
        self.finished.append(call.context.request_id)
        if len(self.finished) == self.calls - 1:
            self.others_finished.set()
        return outcome


async def test_parallel_calls_run_concurrently_and_answer_in_the_order_of_the_calls(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    calls = [
        ("p0", "read_file", {"path": "main.go"}),
        ("p1", "search_text", {"pattern": "func main", "glob": "*.go"}),
        ("p2", "count_lines", {"pattern": "*.go"}),
        ("p3", "read_file", {"path": "../outside"}),
    ]
    chat_server.add(tool_calls(*calls), answer("done"))
    stage = BarrierStage(len(calls))
    printed: list[ToolCallRecord] = []
    async with make_client() as client:
        loop = ToolLoop(client, go_workspace, on_tool_call=printed.append)
        loop.pipeline = CallPipeline(go_workspace, TOOLS, [stage])
        with anyio.fail_after(10):
            transcript = await loop.run_tool_loop(QUESTION)
    assert stage.finished[-1] == "p0"  # it finished last ...
    sent = chat_server.bodies[1]["messages"][-4:]
    assert [m["tool_call_id"] for m in sent] == ["p0", "p1", "p2", "p3"]  # ... yet its answer comes first
    assert [r.id for r in transcript.tool_calls] == ["p0", "p1", "p2", "p3"]
    assert [r.id for r in printed][-1] == "p0"  # printed as they happen
    assert tool_text(sent[0]).startswith("     1\tpackage main\n")
    assert tool_content(sent[3])["error"]["code"] == "path_outside_root"


async def test_a_lone_surrogate_in_a_graded_error_still_reaches_the_model_as_utf8(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    chat_server.add(tool_calls(("s", "read_file", '{"path": "\\udcff.go"}')), answer("No such file."))
    async with make_client() as client:
        with anyio.fail_after(20):
            transcript = await run_tool_loop(QUESTION, client=client, workspace=go_workspace)
    assert transcript.answer == "No such file."
    payload = tool_content(chat_server.bodies[1]["messages"][-1])
    assert payload["error"]["category"] in {"invalid_argument", "not_found"}
    assert "\udcff" not in json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize(
    ("raw", "value", "problem"),
    [
        ("", {}, None),
        ("  \n", {}, None),
        ('{"a": 1}', {"a": 1}, None),
        ("[1]", [1], None),
        ("{", None, "Expecting property name enclosed in double quotes (line 1, column 2)"),
        ('{"a": 1,}', None, "Expecting property name enclosed in double quotes (line 1, column 9)"),
    ],
)
def test_decode_arguments(raw: str, value: Any, problem: str | None) -> None:
    assert decode_arguments(raw) == (value, problem)
