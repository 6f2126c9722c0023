"""The tool loop: ask the model, run the tools it calls, feed the results back, until it answers.

Every tool call goes through the same call pipeline as the MCP server (`runtime.assembly.build_pipeline`),
so the operator's policy and every stage (audit, budgets, breaker, ...) apply to the model's calls exactly
as to an MCP client's. One loop is one session: its calls share a session id, so per-session state (budgets,
breaker) accumulates over the loop. A tool failure is never an exception here: the graded error payload
becomes the tool message content and the model decides what to do next. Malformed argument JSON and unknown
tools are graded the same way (`invalid_arguments`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from repo_sandbox.bridge.client import ChatClient
from repo_sandbox.bridge.errors import MaxRoundsExceededError
from repo_sandbox.bridge.openai import openai_tools
from repo_sandbox.calls import CallContext
from repo_sandbox.errors import InvalidArgumentsError
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.runtime.pipeline import CallOutcome, CallPipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.wiring.render import result_text
from repo_sandbox.workspace import Workspace

DEFAULT_MAX_ROUNDS: Final = 10
"""Most chat requests of one loop (the seed document's limit)."""


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call the model made, and how it ended."""

    round: int
    id: str
    name: str
    arguments: str
    """As the model sent them (JSON text, possibly malformed)."""
    is_error: bool
    error_code: str | None
    duration_ms: float


@dataclass(slots=True)
class Transcript:
    """The loop so far: the whole conversation and the tool calls. `answer` is set once the model answers."""

    session_id: str
    messages: list[dict[str, Any]]
    """The caller's messages, then every assistant message and tool result, in order."""
    tool_calls: list[ToolCallRecord] = field(default_factory=list[ToolCallRecord])
    rounds: int = 0
    """Chat requests made."""
    usage: dict[str, int] = field(default_factory=dict[str, int])
    """Token counts summed over the rounds, as the endpoint reported them."""
    answer: str | None = None
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "finish_reason": self.finish_reason,
            "rounds": self.rounds,
            "usage": self.usage,
            "session_id": self.session_id,
            "tool_calls": [
                {
                    "round": r.round,
                    "id": r.id,
                    "name": r.name,
                    "arguments": r.arguments,
                    "is_error": r.is_error,
                    "error_code": r.error_code,
                    "duration_ms": round(r.duration_ms, 3),
                }
                for r in self.tool_calls
            ],
            "messages": self.messages,
        }


OnToolCall = Callable[[ToolCallRecord], None]
"""Called as each tool call finishes (e.g. to print it)."""


def decode_arguments(raw: str) -> tuple[Any, str | None]:
    """The model's argument text as JSON (empty text counts as `{}`), or the reason it is not JSON."""
    if not raw.strip():
        return {}, None
    try:
        return json.loads(raw), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} (line {exc.lineno}, column {exc.colno})"


def _malformed_json_error(tool: str, reason: str) -> dict[str, Any]:
    return InvalidArgumentsError(
        f"The arguments of {tool} are not valid JSON: {reason}.",
        hint=f'Send the arguments as one JSON object matching the parameters of {tool}, e.g. {{"path": "."}}.',
        field="(arguments)",
        fields=["(arguments)"],
    ).to_payload()


def _tool_message_content(tool: str, payload: Mapping[str, Any], *, is_error: bool, json_text: bool) -> str:
    """What the model reads, as an MCP client's model does: the compact rendering of a success (`render`), the
    JSON of an error, or JSON throughout with `[server] result_text = "json"`."""
    text = json.dumps(payload, ensure_ascii=False)
    if not json_text:
        text = result_text(tool, payload, is_error=is_error, json_text=lambda: text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from undecodable names cannot travel as UTF-8
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class ToolLoop:
    """Runs tool loops against one workspace with one chat client."""

    def __init__(
        self,
        client: ChatClient,
        workspace: Workspace,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        on_tool_call: OnToolCall | None = None,
    ) -> None:
        self.client = client
        self.pipeline: CallPipeline = build_pipeline(workspace, TOOLS)
        self.tools: list[Mapping[str, Any]] = list(
            openai_tools(settings=workspace.settings) if tools is None else tools
        )
        self.on_tool_call = on_tool_call
        self.json_text = workspace.settings.server.result_text == "json"

    async def execute(
        self, tool_call: Mapping[str, Any], session_id: str, round_number: int = 0
    ) -> tuple[dict[str, Any], ToolCallRecord]:
        """Run one (normalised) tool call through the pipeline: the `tool` message answering it, and its record."""
        call_id: str = tool_call["id"]
        name: str = tool_call["function"]["name"]
        raw: str = tool_call["function"]["arguments"]
        arguments, json_problem = decode_arguments(raw)
        context = CallContext(session_id=session_id, request_id=call_id)
        # Malformed JSON still goes through the pipeline (as the raw text, which validation refuses), so the
        # stages see and count it like any other failed call; the model then gets the precise reason.
        outcome: CallOutcome = await self.pipeline.call(name, raw if json_problem else arguments, context)
        payload = outcome.payload
        if json_problem and outcome.error_code == "invalid_arguments" and _is_not_an_object(payload):
            payload = _malformed_json_error(name, json_problem)
        record = ToolCallRecord(
            round_number, call_id, name, raw, outcome.is_error, outcome.error_code, outcome.duration_ms
        )
        if self.on_tool_call is not None:
            self.on_tool_call(record)
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "content": self._content(name, payload, outcome.is_error),
        }, record

    def _content(self, tool: str, payload: Mapping[str, Any], is_error: bool) -> str:
        return _tool_message_content(tool, payload, is_error=is_error, json_text=self.json_text)

    async def run_tool_loop(
        self,
        messages: Sequence[Mapping[str, Any]],
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        *,
        session_id: str | None = None,
        **params: Any,
    ) -> Transcript:
        """Chat until the model answers without calling tools; every turn's calls run concurrently.

        Tool messages are appended in the order of the calls. `params` go into every request body.

        Raises:
            MaxRoundsExceededError: the model still called tools in the `max_rounds`-th answer (its calls are
                not run); the error carries the transcript so far.
            ChatRejectedError, ChatUnavailableError, ChatResponseError: from the chat endpoint.
        """
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        transcript = Transcript(
            session_id=session_id or f"bridge-{uuid.uuid4().hex[:16]}", messages=[dict(m) for m in messages]
        )
        history = transcript.messages
        for round_number in range(1, max_rounds + 1):
            turn = await self.client.chat_with_tools(history, self.tools, **params)
            transcript.rounds = round_number
            for key, value in turn.usage.items():
                transcript.usage[key] = transcript.usage.get(key, 0) + value
            history.append(turn.message)
            if not turn.tool_calls:
                transcript.answer = turn.content or ""
                transcript.finish_reason = turn.finish_reason
                return transcript
            if round_number == max_rounds:
                pending = [call["function"]["name"] for call in turn.tool_calls]
                raise MaxRoundsExceededError(max_rounds, transcript, pending)
            history.extend(await self._run_calls(turn.tool_calls, transcript, round_number))
        raise AssertionError("unreachable")  # the last round returns or raises

    async def _run_calls(
        self, calls: Sequence[Mapping[str, Any]], transcript: Transcript, round_number: int
    ) -> list[dict[str, Any]]:
        results: list[tuple[dict[str, Any], ToolCallRecord] | None] = [None] * len(calls)

        async def run_one(index: int) -> None:
            results[index] = await self.execute(calls[index], transcript.session_id, round_number)

        async with anyio.create_task_group() as group:
            for index in range(len(calls)):
                group.start_soon(run_one, index)
        done = [result for result in results if result is not None]
        transcript.tool_calls.extend(record for _, record in done)
        return [message for message, _ in done]


def _is_not_an_object(payload: Mapping[str, Any]) -> bool:
    return payload.get("error", {}).get("details", {}).get("field") == "(arguments)"


async def run_tool_loop(
    messages: Sequence[Mapping[str, Any]],
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    *,
    client: ChatClient,
    workspace: Workspace,
    on_tool_call: OnToolCall | None = None,
    **params: Any,
) -> Transcript:
    """`ToolLoop(client, workspace).run_tool_loop(messages, max_rounds)` in one call."""
    return await ToolLoop(client, workspace, on_tool_call=on_tool_call).run_tool_loop(messages, max_rounds, **params)
