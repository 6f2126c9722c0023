"""The OpenAI function-calling bridge: the tools for any OpenAI-compatible chat endpoint.

- `openai_tools()`: the tools as OpenAI `tools` definitions (from the schemas the MCP server publishes);
- `ChatClient` / `ChatSettings`: a small async client for `/v1/chat/completions` with timeouts and retries;
- `ToolLoop` / `run_tool_loop`: sends the conversation, runs every tool call the model asks for through the
  same call pipeline as the MCP server, feeds the results back, and repeats until the model answers.

The names are imported lazily, so that `import repo_sandbox.bridge.commands` (the CLI) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from repo_sandbox.bridge.client import ChatClient, ChatSettings
    from repo_sandbox.bridge.errors import (
        BRIDGE_ERRORS,
        ChatRejectedError,
        ChatResponseError,
        ChatUnavailableError,
        MaxRoundsExceededError,
    )
    from repo_sandbox.bridge.loop import ToolCallRecord, ToolLoop, Transcript, run_tool_loop
    from repo_sandbox.bridge.openai import openai_parameters, openai_tool, openai_tools
    from repo_sandbox.bridge.turn import AssistantTurn

_EXPORTS = {
    "ChatClient": "client",
    "ChatSettings": "client",
    "BRIDGE_ERRORS": "errors",
    "ChatRejectedError": "errors",
    "ChatResponseError": "errors",
    "ChatUnavailableError": "errors",
    "MaxRoundsExceededError": "errors",
    "ToolCallRecord": "loop",
    "ToolLoop": "loop",
    "Transcript": "loop",
    "run_tool_loop": "loop",
    "openai_parameters": "openai",
    "openai_tool": "openai",
    "openai_tools": "openai",
    "AssistantTurn": "turn",
}

__all__ = [
    "BRIDGE_ERRORS",
    "AssistantTurn",
    "ChatClient",
    "ChatRejectedError",
    "ChatResponseError",
    "ChatSettings",
    "ChatUnavailableError",
    "MaxRoundsExceededError",
    "ToolCallRecord",
    "ToolLoop",
    "Transcript",
    "openai_parameters",
    "openai_tool",
    "openai_tools",
    "run_tool_loop",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'repo_sandbox.bridge' has no attribute {name!r}")
    return getattr(importlib.import_module(f"repo_sandbox.bridge.{module}"), name)
