"""The OpenAI `tools` export: generated from the registry, valid JSON Schema, no `$ref`/`title` noise."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field

from repo_sandbox.bridge.openai import (
    OPENAI_DESCRIPTION_LIMIT,
    bridge_specs,
    fit_description,
    openai_parameters,
    openai_tool,
    openai_tools,
)
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.tools.spec import ToolSpec
from repo_sandbox.wiring.convert import mcp_tool


def schema_keywords(node: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, keyword) of every keyword at a schema position (property names and data values excluded)."""
    found: list[tuple[str, str]] = []
    if not isinstance(node, dict):
        return found
    for key, value in node.items():
        found.append((path, key))
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for name, sub in value.items():
                found += schema_keywords(sub, f"{path}/{key}/{name}")
        elif key in ("anyOf", "allOf", "oneOf") and isinstance(value, list):
            for index, sub in enumerate(value):
                found += schema_keywords(sub, f"{path}/{key}/{index}")
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            found += schema_keywords(value, f"{path}/{key}")
    return found


def test_every_registered_tool_but_the_elicitation_ones_is_exported_in_registry_order() -> None:
    tools = openai_tools()
    names = [tool["function"]["name"] for tool in tools]
    assert names == [spec.name for spec in TOOLS if not spec.needs_elicitation]
    assert "ask_user" not in names and {"search_files", "read_file", "search_text", "count_lines"} <= set(names)
    for tool in tools:
        assert tool["type"] == "function"
        assert set(tool) == {"type", "function"}
        assert set(tool["function"]) == {"name", "description", "parameters"}


@pytest.mark.parametrize("spec", bridge_specs(), ids=lambda spec: spec.name)
def test_parameters_are_valid_json_schema_with_an_object_root(spec: ToolSpec) -> None:
    parameters = openai_tool(spec)["function"]["parameters"]
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert parameters["type"] == "object"
    assert isinstance(parameters["properties"], dict) and parameters["properties"]


@pytest.mark.parametrize("spec", bridge_specs(), ids=lambda spec: spec.name)
def test_parameters_carry_no_ref_defs_or_title(spec: ToolSpec) -> None:
    keywords = {keyword for _, keyword in schema_keywords(openai_tool(spec)["function"]["parameters"])}
    assert not keywords & {"$ref", "$defs", "definitions", "title"}


@pytest.mark.parametrize("spec", bridge_specs(), ids=lambda spec: spec.name)
def test_parameters_are_the_published_mcp_input_schema_without_titles(spec: ToolSpec) -> None:
    published = mcp_tool(spec).input_schema
    parameters = openai_tool(spec)["function"]["parameters"]
    assert list(parameters["properties"]) == list(published["properties"])
    assert parameters.get("required", []) == published.get("required", [])
    for name, prop in published["properties"].items():
        assert parameters["properties"][name] == {k: v for k, v in prop.items() if k != "title"}


@pytest.mark.parametrize(
    ("tool", "arguments", "valid"),
    [
        # the seed document's calls
        ("search_files", {"pattern": "**/*.go"}, True),
        ("read_file", {"path": "README.md"}, True),
        ("search_text", {"pattern": "func main", "glob": "*.go"}, True),
        ("count_lines", {"path": ".", "pattern": "*.go"}, True),
        ("read_file", {"path": "/etc/passwd"}, True),  # schema-valid: the jail refuses it, not the schema
        # what the schema itself refuses
        ("search_files", {}, False),
        ("read_file", {"path": "README.md", "limit": 0}, False),
        ("read_file", {"path": "README.md", "mode": "w"}, False),
        ("search_text", {"pattern": "x", "output_mode": "lines"}, False),
    ],
)
def test_parameters_accept_and_refuse_what_the_tool_does(tool: str, arguments: dict[str, Any], valid: bool) -> None:
    parameters = {t["function"]["name"]: t["function"]["parameters"] for t in openai_tools()}[tool]
    assert jsonschema.Draft202012Validator(parameters).is_valid(arguments) is valid


@pytest.mark.parametrize("spec", bridge_specs(), ids=lambda spec: spec.name)
def test_descriptions_fit_openais_limit_and_start_like_the_mcp_description(spec: ToolSpec) -> None:
    description = openai_tool(spec)["function"]["description"]
    assert 0 < len(description) <= OPENAI_DESCRIPTION_LIMIT
    assert spec.description_for(None).strip().startswith(description)


def test_unlimited_descriptions_are_the_mcp_descriptions() -> None:
    for spec, tool in zip(bridge_specs(), openai_tools(max_description_chars=0), strict=True):
        assert tool["function"]["description"] == spec.description_for(None).strip()


# fit_description ---------------------------------------------------------------------------------


def test_a_description_that_fits_is_kept_whole() -> None:
    assert fit_description("  Short. Text.  ", 100) == "Short. Text."


def test_a_long_description_is_cut_after_the_last_whole_sentence() -> None:
    text = "First sentence. Second one! Third sentence is long enough to cross the limit."
    assert fit_description(text, 40) == "First sentence. Second one!"


def test_a_description_without_a_sentence_end_is_cut_with_a_marker() -> None:
    assert fit_description("x" * 50, 10) == "x" * 9 + "…"


def test_a_paragraph_break_is_a_cut_point() -> None:
    assert fit_description("Intro without dot\n\nDetails that go on and on and on", 25) == "Intro without dot"


# $ref inlining and title removal on nested models -------------------------------------------------


class Inner(BaseModel):
    title: str = Field(description="A property that is itself called title.")
    depth: int = 0


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: Inner = Field(description="Nested object.")
    items: list[Inner] = Field(default_factory=list[Inner])
    maybe: Inner | None = None
    meta: dict[str, Any] = Field(default={"title": "data, not a keyword"})


def test_refs_are_inlined_and_title_keywords_dropped_but_title_properties_and_data_kept() -> None:
    published = Outer.model_json_schema()
    assert "$defs" in published
    parameters = openai_parameters(published)
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert "$ref" not in str(parameters) and "$defs" not in parameters
    inner = parameters["properties"]["inner"]
    assert inner["description"] == "Nested object."  # the sibling of $ref wins over the definition's
    assert set(inner["properties"]) == {"title", "depth"}
    assert inner["properties"]["title"]["description"] == "A property that is itself called title."
    assert parameters["properties"]["items"]["items"]["properties"]["depth"] == {"default": 0, "type": "integer"}
    assert parameters["properties"]["meta"]["default"] == {"title": "data, not a keyword"}
    assert not {keyword for _, keyword in schema_keywords(parameters)} & {"title", "$ref"}
    validator = jsonschema.Draft202012Validator(parameters)
    assert validator.is_valid({"inner": {"title": "t"}, "maybe": None, "items": [{"title": "u", "depth": 2}]})
    assert not validator.is_valid({"inner": {"depth": 1}})  # the inlined definition still requires its title


class Node(BaseModel):
    children: list[Node] = Field(default_factory=list["Node"])


def test_a_recursive_schema_is_refused_rather_than_inlined_forever() -> None:
    with pytest.raises(ValueError, match="recursive"):
        openai_parameters(Node.model_json_schema())


def test_a_remote_ref_is_refused() -> None:
    with pytest.raises(ValueError, match="only local"):
        openai_parameters({"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}})


def test_a_non_object_root_is_refused() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        openai_parameters({"type": "string"})


def test_an_object_without_properties_gets_an_empty_properties_map() -> None:
    assert openai_parameters({"type": "object"}) == {"type": "object", "properties": {}}


def test_a_labelled_example_line_is_a_cut_point() -> None:
    text = 'Find things.\n\nExample: {"pattern": "*.py"}\nCommon mistake: a long explanation that does not fit'
    assert fit_description(text, 60) == 'Find things.\n\nExample: {"pattern": "*.py"}'


def test_the_definitions_show_the_operators_defaults_and_bounds(make_settings: Any, tmp_path: Any) -> None:
    settings = make_settings(tmp_path, workspace={"include_hidden": True}, limits={"max_timeout_s": 60.0})
    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in openai_tools(settings=settings)}
    assert tools["search_files"]["properties"]["include_hidden"]["default"] is True
    assert tools["execute_bash"]["properties"]["timeout"]["maximum"] == 60.0
    assert tools == {
        spec.name: openai_parameters(mcp_tool(spec, settings).input_schema) for spec in bridge_specs(settings)
    }


def test_execute_bash_is_not_offered_when_the_operator_disabled_it(make_settings: Any, tmp_path: Any) -> None:
    settings = make_settings(tmp_path, exec={"enabled": False})
    names = [tool["function"]["name"] for tool in openai_tools(settings=settings)]
    assert names == ["search_files", "read_file", "search_text", "count_lines"]
