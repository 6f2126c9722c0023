"""The published schemas are the contract a client checks (DESIGN.md §3, §4): the server refuses exactly the
arguments its input schema refuses (as `invalid_arguments` naming the field, never by coercing them), and
every result and every error it sends validates against the tool's output schema. Both protocol eras."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e_tree import ERAS, call_error, call_ok, connect, payload_of
from jsonschema import Draft202012Validator
from mcp import Client

pytestmark = pytest.mark.anyio

WRONG_TYPES = [
    # numbers written as strings, booleans taken for numbers
    ("search_files", {"pattern": "*", "limit": "5"}, "limit"),
    ("search_files", {"pattern": "*", "limit": True}, "limit"),
    ("search_files", {"pattern": "*", "offset": "0"}, "offset"),
    ("search_files", {"pattern": "*", "limit": 5.5}, "limit"),
    ("read_file", {"path": "README.md", "offset": "2"}, "offset"),
    ("read_file", {"path": "README.md", "limit": False}, "limit"),
    ("search_text", {"pattern": "TODO", "context": "2"}, "context"),
    ("search_text", {"pattern": "TODO", "limit": "10"}, "limit"),
    ("search_text", {"pattern": "TODO", "offset": True}, "offset"),
    ("execute_bash", {"command": "pwd", "timeout": "5"}, "timeout"),
    ("execute_bash", {"command": "pwd", "timeout": True}, "timeout"),
    # booleans written as strings or numbers
    ("search_files", {"pattern": "*", "include_hidden": "yes"}, "include_hidden"),
    ("search_files", {"pattern": "*", "include_ignored": 1}, "include_ignored"),
    ("read_file", {"path": "README.md", "line_numbers": "false"}, "line_numbers"),
    ("read_file", {"path": "README.md", "line_numbers": 0}, "line_numbers"),
    ("search_text", {"pattern": "TODO", "fixed_strings": "true"}, "fixed_strings"),
    ("search_text", {"pattern": "TODO", "case_sensitive": 0}, "case_sensitive"),
    ("search_text", {"pattern": "TODO", "multiline": "no"}, "multiline"),
    ("count_lines", {"include_hidden": 1}, "include_hidden"),
    ("count_lines", {"include_ignored": "false"}, "include_ignored"),
    # strings given as other JSON values
    ("search_files", {"pattern": 7}, "pattern"),
    ("read_file", {"path": ["README.md"]}, "path"),
    ("search_text", {"pattern": "TODO", "glob": 3}, "glob"),
    ("count_lines", {"path": {"dir": "src"}}, "path"),
    ("execute_bash", {"command": ["ls", "-la"]}, "command"),
    ("execute_bash", {"command": "pwd", "cwd": 0}, "cwd"),
    ("search_text", {"pattern": "TODO", "output_mode": 1}, "output_mode"),
]
"""Arguments of the wrong JSON type that lax validation would have coerced into something else."""

OUTSIDE_BOUNDS = [
    ("execute_bash", {}, "command"),
    ("execute_bash", {"command": ""}, "command"),
    ("execute_bash", {"command": "pwd", "timeout": 0}, "timeout"),
    ("execute_bash", {"command": "pwd", "timeout": -1}, "timeout"),
    ("execute_bash", {"command": "pwd", "timeout": 120.5}, "timeout"),
    ("execute_bash", {"command": "pwd", "timeout": 1e9}, "timeout"),
    ("execute_bash", {"command": "pwd", "shell": True}, "shell"),
]
"""execute_bash's arguments just outside their bounds (the read tools' are in their own test modules)."""


async def tools_of(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize(("tool", "arguments", "field"), WRONG_TYPES + OUTSIDE_BOUNDS)
async def test_arguments_the_input_schema_refuses_are_invalid_arguments_naming_the_field(
    client: Client, tool: str, arguments: dict[str, Any], field: str
) -> None:
    schema = (await tools_of(client))[tool].input_schema
    assert not Draft202012Validator(schema).is_valid(arguments)
    error = await call_error(client, tool, arguments)
    assert (error["code"], error["category"], error["retryable"]) == ("invalid_arguments", "invalid_argument", False)
    assert error["details"]["field"] == field and field in error["message"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("search_files", {"pattern": "*.md", "limit": 5.0, "offset": 0.0}),
        ("read_file", {"path": "README.md", "offset": 2.0, "limit": 1.0}),
        ("search_text", {"pattern": "TODO", "context": 1.0, "limit": 3.0}),
        ("execute_bash", {"command": "pwd", "timeout": 120}),
        ("execute_bash", {"command": "pwd", "timeout": 0.5}),
        ("search_files", {"pattern": "*.md", "include_hidden": None}),
    ],
)
async def test_arguments_the_input_schema_admits_are_accepted(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    """JSON Schema's integer is any number without a fraction (5.0 is 5); null stands for the server's
    default of an argument the operator sets."""
    schema = (await tools_of(client))[tool].input_schema
    if arguments.get("include_hidden", False) is not None:
        assert Draft202012Validator(schema).is_valid(arguments)
    await call_ok(client, tool, arguments)


async def test_integral_numbers_mean_the_same_as_integers(client: Client) -> None:
    as_float = await call_ok(client, "read_file", {"path": "data/needles.txt", "offset": 4.0, "limit": 2.0})
    as_int = await call_ok(client, "read_file", {"path": "data/needles.txt", "offset": 4, "limit": 2})
    assert as_float == as_int and (as_int["start_line"], as_int["end_line"]) == (4, 5)


async def test_descriptions_say_when_to_use_the_tool_with_an_example_and_a_common_mistake(client: Client) -> None:
    for tool in (await tools_of(client)).values():
        description = tool.description or ""
        assert "Use it" in description and "Example: {" in description and "Common mistake: " in description


# -- published defaults and bounds -----------------------------------------------------------------


async def test_input_schemas_are_valid_and_their_examples_and_defaults_fit_them(client: Client) -> None:
    for tool in (await tools_of(client)).values():
        Draft202012Validator.check_schema(tool.input_schema)
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
            if prop.get("type") != "boolean" and name != "questions":
                assert prop.get("examples"), (tool.name, name)
            for value in [*prop.get("examples", []), *([prop["default"]] if "default" in prop else [])]:
                assert Draft202012Validator(prop).is_valid(value), (tool.name, name, value)


async def test_operator_set_arguments_publish_the_default_and_maximum_that_apply(client: Client) -> None:
    tools = await tools_of(client)
    timeout = tools["execute_bash"].input_schema["properties"]["timeout"]
    assert (timeout["type"], timeout["exclusiveMinimum"], timeout["default"], timeout["maximum"]) == (
        "number",
        0,
        30,
        120,
    )
    for name in ("search_files", "search_text", "count_lines"):
        hidden = tools[name].input_schema["properties"]["include_hidden"]
        assert (hidden["type"], hidden["default"]) == ("boolean", False)


@pytest.mark.parametrize("mode", ERAS)
async def test_published_defaults_follow_the_operators_settings(tree: Path, mode: str) -> None:
    limits = {"default_timeout_s": 10.0, "max_timeout_s": 45.0}
    async with connect(tree, mode, limits=limits, workspace={"include_hidden": True}) as client:
        tools = await tools_of(client)
        timeout = tools["execute_bash"].input_schema["properties"]["timeout"]
        assert (timeout["default"], timeout["maximum"]) == (10, 45)
        assert tools["count_lines"].input_schema["properties"]["include_hidden"]["default"] is True
        error = await call_error(client, "execute_bash", {"command": "pwd", "timeout": 46})
        assert (error["code"], error["details"]["field"]) == ("invalid_arguments", "timeout")


# -- output schemas admit every real result and error ------------------------------------------------

CALLS = [
    ("search_files", {"pattern": "*.md"}),
    ("search_files", {"pattern": "*", "limit": 3, "sort": "modified"}),
    ("read_file", {"path": "README.md"}),
    ("read_file", {"path": "data/needles.txt", "limit": 2, "line_numbers": False}),
    ("read_file", {"path": "data/empty.txt"}),
    ("search_text", {"pattern": "TODO", "context": 1}),
    ("search_text", {"pattern": "needle", "limit": 2}),
    ("search_text", {"pattern": "TODO", "output_mode": "files_with_matches"}),
    ("search_text", {"pattern": "TODO", "output_mode": "count"}),
    ("count_lines", {}),
    ("count_lines", {"path": "data/blob.bin"}),
    ("execute_bash", {"command": "wc -l README.md"}),
    ("execute_bash", {"command": "cat no-such-file"}),
    ("execute_bash", {"command": "ls nosuch 2>/dev/null || cd src && ls; false && ls"}),
    # errors of every kind the tools raise
    ("read_file", {"path": "no/such.txt"}),
    ("read_file", {"path": "../outside"}),
    ("read_file", {"path": ".env"}),
    ("read_file", {"path": "src"}),
    ("read_file", {"path": "data/blob.bin"}),
    ("search_files", {"pattern": "*", "path": "README.md"}),
    ("search_files", {"pattern": "[abc"}),
    ("search_text", {"pattern": "(a)\\1"}),
    ("count_lines", {"limit": 3}),
    ("execute_bash", {"command": "ls & ls"}),
    ("execute_bash", {"command": "rm README.md"}),
    ("write_file", {"path": "x"}),
]


@pytest.mark.slow
async def test_every_result_and_error_validates_against_the_tools_output_schema(client: Client) -> None:
    tools = await tools_of(client)
    codes: set[str] = set()
    for name, arguments in CALLS:
        result = await client.call_tool(name, arguments)
        payload = payload_of(result)
        schema = tools.get(name, tools["read_file"]).output_schema
        Draft202012Validator.check_schema(schema)
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(payload)]
        assert errors == [], (name, arguments, errors)
        assert ("error" in payload) is result.is_error
        if result.is_error:
            codes.add(payload["error"]["code"])
    assert codes == {
        "not_found",
        "path_outside_root",
        "path_denied",
        "not_a_file",
        "binary_file",
        "not_a_directory",
        "invalid_glob",
        "invalid_regex",
        "invalid_arguments",
        "command_parse_error",
        "command_not_allowed",
    }
