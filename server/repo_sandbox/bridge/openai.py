"""The tools as OpenAI `tools` definitions, generated from the schemas the MCP server publishes.

`openai_tools()` reads the registry (`tools.registry.TOOLS`) through `wiring.convert.mcp_tool`, so a tool added there
appears here without further work. The input schema becomes the function's `parameters` after two
rewrites OpenAI-compatible endpoints need: `$ref`s are inlined (no `$defs`), and pydantic's generated
`title`s are dropped (they repeat the property names and cost tokens). Everything else (descriptions,
bounds, enums, defaults, examples) is kept: it is valid JSON Schema and it guides the model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from repo_sandbox.config.model import Settings
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.tools.spec import ToolSpec
from repo_sandbox.wiring.convert import mcp_tool

OPENAI_DESCRIPTION_LIMIT: Final = 1024
"""OpenAI refuses a `function.description` longer than this (error `string_above_max_length`)."""

_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What OpenAI accepts as a function name."""

_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "dependentSchemas"})
"""Keywords whose value maps names to subschemas (the names are data, e.g. a property called `title`)."""
_SCHEMA_LISTS: Final = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
_SCHEMA_VALUES: Final = frozenset(
    {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems"}
)
_DEFINITIONS: Final = ("$defs", "definitions")
_CUT_POINT: Final = re.compile(r"[.!?](?=\s|$)|\n\n|^[A-Z][\w ]{0,30}: [^\n]*$", re.MULTILINE)
"""Where a description may be cut: after a sentence, a paragraph, or a labelled line ("Example: ...")."""


def openai_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An input schema as OpenAI function `parameters`: `$ref`s inlined, `title`s dropped, an object root.

    Raises:
        ValueError: for a recursive or non-local `$ref` (it cannot be inlined).
    """
    definitions: dict[str, Any] = {}
    for key in _DEFINITIONS:
        definitions.update({f"#/{key}/{name}": sub for name, sub in schema.get(key, {}).items()})
    parameters = _rewrite(schema, definitions, ())
    if parameters.get("type") != "object":
        raise ValueError("function parameters must be a JSON Schema with type 'object'")
    parameters.setdefault("properties", {})
    return parameters


def _rewrite(node: Mapping[str, Any], definitions: Mapping[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref not in definitions:
            raise ValueError(f"cannot inline $ref {ref!r}: only local #/$defs references are supported")
        if ref in seen:
            raise ValueError(f"cannot inline the recursive $ref {ref!r}")
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return _rewrite({**definitions[ref], **siblings}, definitions, (*seen, ref))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or key in _DEFINITIONS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: _rewrite(sub, definitions, seen) for name, sub in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_rewrite(sub, definitions, seen) for sub in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        elif key in _SCHEMA_VALUES and isinstance(value, Mapping):
            out[key] = _rewrite(value, definitions, seen)  # pyright: ignore[reportUnknownArgumentType]
        else:
            out[key] = value  # data (default, examples, enum, const) or a plain keyword: kept as it is
    return out


def fit_description(description: str, limit: int = OPENAI_DESCRIPTION_LIMIT) -> str:
    """`description` (stripped) if it fits in `limit` characters, else its longest prefix ending at a cut point.

    `limit` 0 means no limit. The full text stays available through MCP and `repo-sandbox tools`.
    """
    text = description.strip()
    if limit <= 0 or len(text) <= limit:
        return text
    ends = [match.end() for match in _CUT_POINT.finditer(text) if match.end() <= limit]
    if not ends:
        return text[: limit - 1].rstrip() + "…"
    return text[: ends[-1]].rstrip()


def openai_tool(
    spec: ToolSpec, settings: Settings | None = None, *, max_description_chars: int = OPENAI_DESCRIPTION_LIMIT
) -> dict[str, Any]:
    """One tool as an OpenAI `tools` entry: `{"type": "function", "function": {name, description, parameters}}`;
    the parameters show the defaults and bounds of the operator's `settings`, as the MCP server publishes them."""
    tool = mcp_tool(spec, settings)
    if not _NAME.match(tool.name):
        raise ValueError(f"tool name {tool.name!r} is not a valid OpenAI function name")
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": fit_description(tool.description or "", max_description_chars),
            "parameters": openai_parameters(tool.input_schema),
        },
    }


def bridge_specs(settings: Settings | None = None) -> list[ToolSpec]:
    """The registered tools the bridge can run: those the MCP server offers a client that cannot elicit (not
    `ask_user`: the bridge's loop has no human to ask through; not `execute_bash` when `exec.enabled` is off)."""
    return [spec for spec in TOOLS if spec.offered(settings, can_elicit=False)]


def openai_tools(
    specs: Iterable[ToolSpec] | None = None,
    *,
    settings: Settings | None = None,
    max_description_chars: int = OPENAI_DESCRIPTION_LIMIT,
) -> list[dict[str, Any]]:
    """The bridge's tools (or `specs`) as OpenAI `tools` definitions, in registry order, under the operator's
    `settings` (None: the built-in defaults)."""
    chosen = bridge_specs(settings) if specs is None else specs
    return [openai_tool(spec, settings, max_description_chars=max_description_chars) for spec in chosen]
