"""Our objects as MCP objects: a tool spec as a `Tool` definition, a pipeline outcome as a `CallToolResult`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations

from repo_sandbox.wiring.render import result_text

if TYPE_CHECKING:
    from repo_sandbox.config.model import Settings
    from repo_sandbox.runtime.pipeline import CallOutcome
    from repo_sandbox.tools.spec import ToolSpec


def mcp_tool(spec: ToolSpec, settings: Settings | None = None) -> Tool:
    """The MCP tool definition: description, input/output schemas and annotations; the input schema shows
    the defaults and bounds of the operator's `settings` (None: the built-in ones)."""
    return Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description_for(settings),
        input_schema=spec.input_schema(settings),
        output_schema=spec.output_schema(),
        annotations=ToolAnnotations(  # no title here: the tool's own `title` says it once
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=spec.open_world,
        ),
    )


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def call_tool_result(outcome: CallOutcome, *, json_text: bool = False) -> CallToolResult:
    """A pipeline outcome as an MCP result: the typed object as structured content, and as text its compact
    rendering for the model (`render`), or with `json_text` (and always for an error) the same object as JSON.

    Lone surrogates (undecodable file-name bytes, or escapes a client sent) cannot be written as UTF-8;
    they would break the transport for every later message, so they are replaced here as a last resort.
    """

    def text_of(payload: dict[str, Any], to_json: Callable[[], str]) -> str:
        return (
            to_json() if json_text else result_text(outcome.tool, payload, is_error=outcome.is_error, json_text=to_json)
        )

    payload = outcome.payload
    text = text_of(payload, outcome.to_json)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            payload = _without_surrogates(payload)
            text = text_of(payload, lambda: json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=outcome.is_error,
    )


def tools_listing(settings: Settings | None = None) -> str:
    """The tools with their schemas and annotations, as JSON (for `repo-sandbox tools`): every tool a client
    that can elicit is offered, with the defaults and bounds of the operator's `settings`."""
    from repo_sandbox.tools.registry import TOOLS

    return json.dumps(
        [
            mcp_tool(spec, settings).model_dump(mode="json", by_alias=True, exclude_none=True)
            for spec in TOOLS
            if spec.offered(settings, can_elicit=True)
        ],
        indent=2,
    )
