"""One assistant turn of a chat completion, normalised so that it can go back into the history as is.

OpenAI-compatible servers differ in small ways: some omit tool call ids or `type`, send `arguments` as an
object instead of a JSON string, or return content as a list of parts. `parse_turn` accepts those and
produces the canonical OpenAI shape; anything without a usable `choices[0].message` is `llm_bad_response`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from repo_sandbox.bridge.errors import ChatResponseError


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """What the model said in one turn."""

    message: dict[str, Any]
    """The assistant message to append to the history (`role`, `content`, and `tool_calls` when there are any)."""
    tool_calls: list[dict[str, Any]]
    """`[{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]`, in the model's order."""
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict[str, int])
    """Token counts reported by the endpoint (`prompt_tokens`, `completion_tokens`, `total_tokens`)."""

    @property
    def content(self) -> str | None:
        return self.message.get("content")


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts: list[Any] = content  # pyright: ignore[reportUnknownVariableType]
        return "".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    raise ChatResponseError("The chat endpoint's message content is neither text nor a list of parts.")


def _tool_call(raw: Any, index: int) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):  # pyright: ignore[reportUnknownMemberType]
        raise ChatResponseError(f"Tool call #{index} in the chat endpoint's answer has no 'function' object.")
    function: dict[str, Any] = raw["function"]  # pyright: ignore[reportUnknownVariableType]
    call_id = raw.get("id")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    name = function.get("name")
    arguments = function.get("arguments")
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):  # some servers send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": call_id if isinstance(call_id, str) and call_id else f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name if isinstance(name, str) else "", "arguments": arguments},
    }


def parse_turn(body: dict[str, Any]) -> AssistantTurn:
    """The first choice of a chat completion response.

    Raises:
        ChatResponseError: no `choices[0].message`, or malformed content or tool calls.
    """
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        error = body.get("error")
        detail = f": {str(error)[:300]}" if error else ""
        raise ChatResponseError(f"The chat endpoint's answer has no choices{detail}.")
    choice: dict[str, Any] = choices[0]  # pyright: ignore[reportUnknownVariableType]
    raw_message = choice.get("message")
    if not isinstance(raw_message, dict):
        raise ChatResponseError("The chat endpoint's first choice has no message.")
    message_in: dict[str, Any] = raw_message  # pyright: ignore[reportUnknownVariableType]
    raw_calls = message_in.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ChatResponseError("The chat endpoint's 'tool_calls' is not a list.")
    tool_calls = [_tool_call(raw, index) for index, raw in enumerate(raw_calls)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    message: dict[str, Any] = {"role": "assistant", "content": _text(message_in.get("content"))}
    if tool_calls:
        message["tool_calls"] = tool_calls
    usage_in = body.get("usage")
    usage: dict[str, int] = {}
    if isinstance(usage_in, dict):
        for key, value in usage_in.items():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool):
                usage[key] = value
    finish_reason = choice.get("finish_reason")
    return AssistantTurn(
        message=message,
        tool_calls=tool_calls,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=usage,
    )
