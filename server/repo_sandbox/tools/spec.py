"""What the call pipeline and the MCP wiring know of a tool (`ToolSpec`): its name, argument model, result models,
body and hints, as plain data, and the JSON Schemas published for it. The tools themselves are listed in
`tools.registry`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Union

from pydantic import BaseModel, TypeAdapter

from repo_sandbox.config.model import LimitsConfig, Settings
from repo_sandbox.tools._results import ErrorBody

ToolBody = Callable[..., Any]
"""`body(workspace, args) -> result model`, run in a worker thread; or `async def body(workspace, args, context)`."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    args_model: type[BaseModel]
    result_models: tuple[type[BaseModel], ...]
    body: ToolBody
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False
    needs_elicitation: bool = False
    """Listed only to clients that can ask their user (MCP elicitation)."""
    describe: Callable[[Settings | None], str] | None = None
    """The description under the operator's settings, when it depends on them (execute_bash names the programs)."""

    def description_for(self, settings: Settings | None) -> str:
        return self.description if self.describe is None else self.describe(settings)

    def offered(self, settings: Settings | None, *, can_elicit: bool) -> bool:
        """Whether a client is shown this tool: not `ask_user` to one that cannot elicit, not `execute_bash`
        when the operator turned it off (`exec.enabled = false`; a call still gets `command_not_allowed`)."""
        if self.needs_elicitation and not can_elicit:
            return False
        return self.name != "execute_bash" or settings is None or settings.exec.enabled

    def input_schema(self, settings: Settings | None = None) -> dict[str, Any]:
        """The argument model's JSON Schema, with the defaults and bounds the operator's `settings` decide
        (None: the built-in defaults) written in (see `operator_properties`)."""
        schema = lean_schema(self.args_model.model_json_schema(), drop=_TITLES)
        properties: dict[str, Any] = schema["properties"]
        for name, published in operator_properties(settings).items():
            if name in properties:
                kept = {key: properties[name][key] for key in ("description", "examples") if key in properties[name]}
                properties[name] = {**published, **kept}
        return schema

    def output_schema(self) -> dict[str, Any]:
        """`anyOf` the success shapes and the error shape, with an object root (TypeScript clients need it).

        The `$defs` are written in place of their `$ref`s: the same schema, which clients validate every
        result against faster (no reference to resolve per object)."""
        union: Any = Union[self.result_models]  # a runtime-built union  # noqa: UP007
        schema = TypeAdapter[Any](union).json_schema()
        schema = inline_refs(schema, schema.pop("$defs", {}))
        successes = schema.get("anyOf", [schema])
        lean = [lean_schema(shape, drop=_OUTPUT_ANNOTATIONS) for shape in successes]
        return {"anyOf": [*merged_shapes(lean), ERROR_SHAPE], "type": "object"}


def operator_properties(settings: Settings | None) -> dict[str, dict[str, Any]]:
    """Arguments whose default or bound is the operator's setting, as their published JSON Schema.

    The argument models leave these None ("the server's setting", which also admits an explicit null);
    a client is shown the value that applies instead: `include_hidden` a boolean defaulting to
    `workspace.include_hidden`, `timeout` a number defaulting to `limits.default_timeout_s`, at most
    `limits.max_timeout_s`."""
    limits = settings.limits if settings is not None else LimitsConfig()
    include_hidden = settings.workspace.include_hidden if settings is not None else False
    return {
        "include_hidden": {"type": "boolean", "default": include_hidden},
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": limits.max_timeout_s,
            "default": limits.default_timeout_s,
        },
    }


def inline_refs(schema: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """`schema` with every `{"$ref": "#/$defs/X"}` replaced by X (its own sibling keywords kept beside it)."""
    if isinstance(schema, list):
        return [inline_refs(item, defs, seen) for item in schema]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(schema, dict):
        return schema
    items: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
    ref = items.get("$ref")
    if not isinstance(ref, str):
        return {key: inline_refs(value, defs, seen) for key, value in items.items()}
    name = ref.removeprefix("#/$defs/")
    if name in seen or name not in defs:
        raise ValueError(f"cannot inline {ref!r} (recursive or unknown)")
    target = inline_refs(defs[name], defs, (*seen, name))
    siblings = {key: inline_refs(value, defs, seen) for key, value in items.items() if key != "$ref"}
    return {**target, **siblings} if set(siblings) <= _ANNOTATIONS else {"allOf": [target, siblings]}


_ANNOTATIONS: Final = frozenset({"title", "description", "default", "examples"})
_TITLES: Final = frozenset({"title"})
"""pydantic's titles repeat the property names: dropped from every published schema."""
_OUTPUT_ANNOTATIONS: Final = frozenset({"title", "description", "default"})
"""An output schema is for validation (the result's text and the tool description explain the fields)."""
_SUBSCHEMA_MAPS: Final = frozenset({"properties", "$defs", "patternProperties"})
_SUBSCHEMA_LISTS: Final = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
_SUBSCHEMA_VALUES: Final = frozenset({"items", "additionalProperties", "not", "contains"})


ERROR_SHAPE: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "error": {"type": "object", "required": [name for name in ErrorBody.model_fields if name != "details"]}
    },
    "required": ["error"],
    "additionalProperties": False,
}
"""The error branch of every output schema: what tells an error result apart, once, without its annotations."""


def merged_shapes(shapes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Object shapes that differ only in which of their properties are present (search_text's three modes)
    as one shape: the properties of all, those common to all required, and `anyOf` the rest of each's
    `required`. Shapes that give one property two schemas are left as they are."""
    if len(shapes) < 2:
        return shapes
    properties: dict[str, Any] = {}
    for shape in shapes:
        for name, schema in shape["properties"].items():
            if properties.setdefault(name, schema) != schema:
                return shapes
    required: list[list[str]] = [shape.get("required", []) for shape in shapes]
    common = [name for name in required[0] if all(name in names for names in required)]
    return [
        {
            "type": "object",
            "properties": properties,
            "required": common,
            "anyOf": [{"required": [name for name in names if name not in common]} for names in required],
            "additionalProperties": False,
        }
    ]


def lean_schema(schema: Any, *, drop: frozenset[str]) -> Any:
    """`schema` without the annotation keywords in `drop`, and each `anyOf: [{type: T, ...}, {type: null}]`
    written as `type: [T, "null"]` (the same set of values: T's keywords apply only to T's values).
    Property names are data, not keywords: a property called `title` stays."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():  # pyright: ignore[reportUnknownVariableType]
        if key in drop:
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: lean_schema(sub, drop=drop) for name, sub in value.items()}  # pyright: ignore[reportUnknownVariableType]
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [lean_schema(sub, drop=drop) for sub in value]  # pyright: ignore[reportUnknownVariableType]
        elif key in _SUBSCHEMA_VALUES:
            out[key] = lean_schema(value, drop=drop)
        else:
            out[key] = value
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:  # pyright: ignore[reportUnknownArgumentType]
        (typed,) = [branch for branch in branches if branch != {"type": "null"}]  # pyright: ignore[reportUnknownVariableType]
        if isinstance(typed, dict) and isinstance(typed.get("type"), str) and not set(typed) & set(out):  # pyright: ignore[reportUnknownArgumentType]
            del out["anyOf"]
            out = {**typed, **out, "type": [typed["type"], "null"]}
    return out
