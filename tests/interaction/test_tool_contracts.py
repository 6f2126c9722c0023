"""What the four read-only tools share, end to end: schemas and annotations, operator defaults, walk caps,
file names that JSON cannot carry."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e_tree import DEFAULT_VISIBLE, ERAS, HIDDEN, IGNORED, call_error, call_ok, connect, path_order, payload_of, write
from mcp import Client

pytestmark = pytest.mark.anyio

ARGUMENTS = {
    "search_files": {"pattern", "path", "limit", "offset", "sort", "include_hidden", "include_ignored"},
    "read_file": {"path", "offset", "limit", "line_numbers"},
    "search_text": {
        "pattern",
        "path",
        "glob",
        "fixed_strings",
        "case_sensitive",
        "multiline",
        "context",
        "output_mode",
        "limit",
        "offset",
        "include_hidden",
        "include_ignored",
    },
    "count_lines": {"path", "pattern", "include_hidden", "include_ignored"},
    "execute_bash": {"command", "timeout", "cwd"},
}
"""DESIGN.md §3: every argument of every tool, and nothing else."""
REQUIRED = {
    "search_files": ["pattern"],
    "read_file": ["path"],
    "search_text": ["pattern"],
    "count_lines": [],
    "execute_bash": ["command"],
}
BOUNDS = {
    ("search_files", "limit"): (1, 1000, 100),
    ("read_file", "limit"): (1, 5000, 2000),
    ("read_file", "offset"): (1, None, 1),
    ("search_text", "limit"): (1, 1000, 100),
    ("search_text", "context"): (0, 10, 0),
}


async def test_tools_list_publishes_the_designed_arguments_with_descriptions_and_bounds(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == set(ARGUMENTS)
    for name, tool in tools.items():
        schema = tool.input_schema
        assert set(schema["properties"]) == ARGUMENTS[name]
        assert schema.get("required", []) == REQUIRED[name]
        assert schema.get("additionalProperties") is False
        assert all(prop.get("description") for prop in schema["properties"].values()), name
        assert tool.description and "Example:" in tool.description and "mistake" in tool.description
    for (name, field), (low, high, default) in BOUNDS.items():
        prop = tools[name].input_schema["properties"][field]
        assert (prop.get("minimum"), prop.get("maximum"), prop["default"]) == (low, high, default)


async def test_tools_list_publishes_read_only_annotations_and_output_schemas_admitting_errors(client: Client) -> None:
    for tool in (await client.list_tools()).tools:
        assert tool.annotations is not None
        read_tool = tool.name != "execute_bash"
        assert (tool.annotations.read_only_hint, tool.annotations.destructive_hint) == (read_tool, False)
        assert (tool.annotations.idempotent_hint, tool.annotations.open_world_hint) == (read_tool, False)
        schema = tool.output_schema
        assert schema is not None and schema["type"] == "object"
        branches = schema["anyOf"]  # the shapes are written in place (no $ref for the client to resolve)
        assert "$defs" not in schema and "$ref" not in str(schema) and len(branches) >= 2
        assert [set(branch["properties"]) for branch in branches].count({"error"}) == 1


async def test_unknown_tool_is_a_graded_error(client: Client) -> None:
    error = await call_error(client, "write_file", {"path": "x"})
    assert error["code"] == "invalid_arguments"
    assert "search_files" in error["hint"]


# -- operator settings ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_operator_include_hidden_is_the_default_and_a_call_may_still_exclude(tree: Path, mode: str) -> None:
    async with connect(tree, mode, workspace={"include_hidden": True}) as client:
        default = await call_ok(client, "search_files", {"pattern": "*", "limit": 1000})
        assert default["files"] == path_order([*DEFAULT_VISIBLE, *HIDDEN])
        excluded = await call_ok(client, "search_files", {"pattern": "*", "limit": 1000, "include_hidden": False})
        assert excluded["files"] == DEFAULT_VISIBLE
        counted = await call_ok(client, "count_lines", {"pattern": ".dotfile"})
        assert counted["files"] == 1
        found = await call_ok(client, "search_text", {"pattern": "dot TODO", "output_mode": "files_with_matches"})
        assert found["files"] == [".dotfile"]


@pytest.mark.parametrize("mode", ERAS)
async def test_operator_can_turn_ignore_files_off(tree: Path, mode: str) -> None:
    async with connect(tree, mode, workspace={"respect_gitignore": False}) as client:
        result = await call_ok(client, "search_files", {"pattern": "*", "limit": 1000})
        assert result["files"] == path_order([*DEFAULT_VISIBLE, *IGNORED])


@pytest.mark.parametrize("mode", ERAS)
async def test_walk_entry_cap_marks_every_listing_truncated(tree: Path, mode: str) -> None:
    async with connect(tree, mode, workspace={"max_walk_entries": 40}) as client:
        listed = await call_ok(client, "search_files", {"pattern": "*", "limit": 1000})
        assert listed["truncated"] is True and listed["total"] < len(DEFAULT_VISIBLE)
        assert listed["next_offset"] is None  # nothing more to page: the walk itself stopped
        searched = await call_ok(client, "search_text", {"pattern": "TODO"})
        assert searched["truncated"] is True
        counted = await call_ok(client, "count_lines", {})
        assert counted["truncated"] is True and counted["files"] < len(DEFAULT_VISIBLE)


# -- file names that are not UTF-8 ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_non_utf8_file_names_are_left_out_and_the_server_keeps_answering(tmp_path: Path, mode: str) -> None:
    write(tmp_path / "good.txt", "TODO\n")
    write(tmp_path / "bad\udcff.txt", b"TODO\n")  # the name on disk is b"bad\xff.txt"
    assert os.fsencode("bad\udcff.txt") in os.listdir(os.fsencode(tmp_path))
    async with connect(tmp_path, mode) as client:
        listed = await call_ok(client, "search_files", {"pattern": "*"})
        assert listed["files"] == ["good.txt"]
        found = await call_ok(client, "search_text", {"pattern": "TODO", "output_mode": "files_with_matches"})
        assert found["files"] == ["good.txt"]
        counted = await call_ok(client, "count_lines", {})
        assert counted["largest"] == [{"path": "good.txt", "lines": 1}]
        # a client may name it with a JSON escape; whatever the jail decides, no lone surrogate comes back
        named = await client.call_tool("read_file", {"path": "bad\udcff.txt"})
        assert "\udcff" not in str(payload_of(named))
        assert (await call_ok(client, "read_file", {"path": "good.txt"}))["total_lines"] == 1
