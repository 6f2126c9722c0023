"""Property: no argument value makes a tool answer internal_error; hostile input gets a graded error.

Every string argument of every tool is drawn from NUL bytes, lone surrogates, huge strings, nested braces
and brackets, regex and glob metacharacters and ordinary text; the other arguments keep valid values. A
call either succeeds or fails with a graded code (anything but internal_error). Derandomized, so CI sees the
same examples every time.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import build_small_repo

from repo_sandbox.calls import CallContext
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

STRING_ARGUMENTS: dict[str, dict[str, Any]] = {
    "search_files": {"pattern": "*.py", "path": "."},
    "read_file": {"path": "README.md"},
    "search_text": {"pattern": "TODO", "path": ".", "glob": "*.md"},
    "count_lines": {"path": ".", "pattern": "*.py"},
    "execute_bash": {"command": "cat README.md", "cwd": "."},
}
"""Each tool's string arguments, with a valid value for the ones not being drawn."""

SESSIONS = itertools.count()
BRACE_DEPTH = 300
"""Nesting depth of the brace strategy (a glob or pattern of 300 nested braces is 600+ characters)."""

ATOMS = [
    *("\x00", "\ud800", "\udcff", "\ufeff", "\u202e", "\uffff", "\U0001f600", "e\u0301", "\r\n", "\t", " "),
    *("{", "}", "[", "]", "(", ")", "*", "**", "?", "\\", "^", "$", "|", "+", ".", "/", "..", "-", "--", "~"),
    *("{a,b}", "[!a]", "[[:alpha:]]", "(?i)", "\\x00", "\\p{L}", "(?<n>x)", "\\1", "a{99999}", "\\u{D800}"),
    *("README.md", "src", "main.py", ".env", ".git", "TODO", "$(id)", "`id`", ";", "&&", ">", "<", "'", '"'),
]


def nested(depth: int, open_: str, close: str, inner: str) -> str:
    return open_ * depth + inner + close * depth


hostile_strings = st.one_of(
    st.lists(st.sampled_from(ATOMS), max_size=8).map("".join),
    st.text(max_size=40),
    st.builds(
        nested,
        st.integers(0, BRACE_DEPTH),
        st.sampled_from(["{", "[", "(", "{a,"]),
        st.sampled_from(["}", "]", ")"]),
        st.sampled_from(["", "a", "*", "\x00", "a,b"]),
    ),
    st.builds(
        lambda atom, n: atom * n,
        st.sampled_from(["a", "\x00", "{", "(", "*", "é", "/"]),
        st.sampled_from([1000, 20_000, 200_000]),
    ),
)


@pytest.fixture
def workspace(tmp_path: Path, make_workspace: Any) -> Workspace:
    """One workspace for all examples of a test (hypothesis runs a function-scoped fixture once)."""
    return make_workspace(build_small_repo(tmp_path))


calls = st.sampled_from(sorted(STRING_ARGUMENTS)).flatmap(
    lambda tool: st.tuples(st.just(tool), st.sampled_from(sorted(STRING_ARGUMENTS[tool])), hostile_strings)
)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(call=calls)
def test_no_string_argument_yields_internal_error(workspace: Workspace, call: tuple[str, str, str]) -> None:
    tool, name, value = call
    arguments = {**STRING_ARGUMENTS[tool], name: value}

    async def run() -> Any:
        context = CallContext(session_id=f"hostile-{next(SESSIONS)}")  # no guard rail remembers the last one
        with anyio.fail_after(60):
            return await build_pipeline(workspace, TOOLS).call(tool, arguments, context)

    outcome = anyio.run(run)
    if outcome.is_error:
        error = outcome.payload["error"]
        assert error["code"] != "internal_error", (tool, name, value[:200])
        assert error["category"] != "internal"


NUL_ROWS = [
    (tool, name, value)
    for tool, arguments in sorted(STRING_ARGUMENTS.items())
    for name in sorted(arguments)
    for value in ("\x00", f"{arguments[name]}\x00", f"\x00{arguments[name]}", "a\x00b")
]


@pytest.mark.parametrize(("tool", "name", "value"), NUL_ROWS)
def test_a_nul_byte_in_any_string_argument_is_invalid_arguments(
    workspace: Workspace, tool: str, name: str, value: str
) -> None:
    async def run() -> Any:
        context = CallContext(session_id=f"nul-{next(SESSIONS)}")
        with anyio.fail_after(60):
            return await build_pipeline(workspace, TOOLS).call(tool, {**STRING_ARGUMENTS[tool], name: value}, context)

    outcome = anyio.run(run)
    assert outcome.is_error
    error = outcome.payload["error"]
    assert (error["code"], error["category"], error["details"].get("field")) == (
        "invalid_arguments",
        "invalid_argument",
        name,
    )
