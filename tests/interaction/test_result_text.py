"""What the model reads: `content[0].text` is a compact rendering of each result (search_text as `rg -n
--heading` prints it, read_file as `cat -n`, one path per line, a small table, stdout/stderr/exit code, a
`[more: offset=N]` footer), errors stay JSON, `[server] result_text = "json"` restores the JSON text, and the
tools/list reply stays lean -- all through the real SDK client."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e_tree import ERAS, connect
from mcp import Client
from mcp.types import ElicitResult, TextContent

from repo_sandbox.config.loader import load_settings
from repo_sandbox.testing import ScriptedUser
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from tree_files import write

pytestmark = pytest.mark.anyio

APP = "import os\ndef load_cache():\n    return {}\nx = 1\ny = 2\nz = 3\nw = 4\ndef save_cache(x):\n    pass\n"
APP += "def drop_cache():\n    pass\n# end\n"


def output(command: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    """What a reference command prints (run before the client connects)."""
    return subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, check=True).stdout


def rg() -> str:
    """The rg the server uses when there is no system one: the `ripgrep` wheel's, next to this Python."""
    found = shutil.which("rg") or str(Path(sys.executable).with_name("rg"))
    assert Path(found).exists()
    return found


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("text") / "repo"
    write(root / "src" / "app.py", APP)
    write(root / "b.py", "def b_cache():\n    return 1\n")
    write(root / "docs" / "notes.md", "".join(f"note {i}\n" for i in range(1, 8)))
    write(root / "empty.txt", "")
    return root


@pytest.mark.parametrize("mode", ERAS)
async def test_masked_secrets_are_counted_on_a_last_line(tmp_path: Path, mode: str) -> None:
    secret = "ghp_" + "Qx7" * 12
    write(tmp_path / "conf.py", f'TOKEN = "{secret}"\nname = "demo"\n')
    async with connect(tmp_path, mode) as client:
        read, structured, _ = await text_of(client, "read_file", {"path": "conf.py"})
        found, _, _ = await text_of(client, "search_text", {"pattern": "TOKEN|name"})
    assert structured["redactions"] == 1 and secret not in read + found
    assert read.endswith('     2\tname = "demo"\n[1 secret masked]\n')
    assert found.startswith("conf.py\n1:TOKEN = ") and found.endswith('2:name = "demo"\n[1 secret masked]\n')


async def text_of(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any], bool]:
    with anyio.fail_after(20):
        result = await client.call_tool(tool, arguments)
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    assert isinstance(result.structured_content, dict)
    return result.content[0].text, result.structured_content, result.is_error  # pyright: ignore[reportUnknownVariableType]


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("arguments", "rg_args"),
    [
        ({"pattern": r"def \w+_cache"}, []),
        ({"pattern": r"def \w+_cache", "context": 1}, ["-C1"]),  # merged context, `--` between groups
        ({"pattern": "cache", "context": 2, "path": "src"}, ["-C2"]),
        ({"pattern": r"def \w+_cache", "output_mode": "files_with_matches"}, ["-l"]),
        ({"pattern": "_cache", "output_mode": "count"}, ["-c"]),
        ({"pattern": r"cache\(\):\n +return", "multiline": True}, ["-U"]),  # a match of two lines
        ({"pattern": r"cache\(\):\n +return", "multiline": True, "context": 1}, ["-U", "-C1"]),
    ],
)
async def test_search_text_reads_exactly_as_rg_prints_it(
    repo: Path, mode: str, arguments: dict[str, Any], rg_args: list[str]
) -> None:
    command = [rg(), "-n", "--heading", "--sort", "path", *rg_args, "--", arguments["pattern"]]
    if "path" in arguments:
        command.append(arguments["path"])
    expected = output(command, repo).decode()
    async with connect(repo, mode) as client:
        text, structured, is_error = await text_of(client, "search_text", arguments)
    assert not is_error and structured["total_matches"] > 0  # the typed object is still there
    assert text == expected


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "read_file",
            {"path": "src/app.py", "limit": 2},
            "     1\timport os\n     2\tdef load_cache():\n[more: offset=3; 12 lines in all]\n",
        ),
        ("read_file", {"path": "b.py", "line_numbers": False}, "def b_cache():\n    return 1\n"),
        ("read_file", {"path": "empty.txt"}, "[empty file]\n"),
        ("search_files", {"pattern": "*.py"}, "b.py\nsrc/app.py\n"),
        ("search_files", {"pattern": "*", "limit": 2}, "b.py\ndocs/notes.md\n[more: offset=2; 4 files in all]\n"),
        ("search_files", {"pattern": "*.rs"}, "No files match.\n"),
        ("search_text", {"pattern": "note", "limit": 2}, "docs/notes.md\n1:note 1\n2:note 2\n[more: offset=2]\n"),
        ("search_text", {"pattern": "nothing here"}, "No matches (4 files searched).\n"),
        (
            "count_lines",
            {"path": "docs"},
            (
                "7 lines in 1 file (49 bytes)\n"
                "    lines  files  extension\n        7      1  .md\n    lines  largest files\n        7  docs/notes.md\n"
            ),
        ),
        ("execute_bash", {"command": "wc -l b.py"}, "2 b.py\n[exit code 0]\n"),
        (
            "execute_bash",
            {"command": "cat b.py missing.txt"},
            "def b_cache():\n    return 1\n[stderr]\ncat: missing.txt: No such file or directory\n[exit code 1]\n",
        ),
    ],
)
async def test_each_tool_reads_like_the_command_it_stands_for(
    repo: Path, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with connect(repo, "auto", exec={"sandbox": "auto"}) as client:
        text, structured, is_error = await text_of(client, tool, arguments)
    assert not is_error
    assert text == expected, structured


async def test_ask_user_reads_as_questions_and_answers(repo: Path) -> None:
    user = ScriptedUser([ElicitResult(action="accept", content={"answer_1": "core", "answer_2": ""})])
    workspace = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): str(repo)}))
    questions = [{"question": "Which package first?", "choices": ["core", "cli"]}, {"question": "Any deadline?"}]
    try:
        async with Client(build_server(workspace), mode="legacy", elicitation_callback=user) as client:
            text, structured, is_error = await text_of(client, "ask_user", {"questions": questions})
    finally:
        workspace.close()
    assert not is_error and structured["status"] == "answered"
    assert text == (
        "[answered]\nQ: Which package first?\nA: core\nQ: Any deadline?\nA: (no answer)\n"
        "The user answered; 1 answer(s) were left empty.\n"
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_an_error_is_still_its_json_object(repo: Path, mode: str) -> None:
    async with connect(repo, mode) as client:
        text, structured, is_error = await text_of(client, "read_file", {"path": "../outside"})
    assert is_error and json.loads(text) == structured
    assert structured["error"]["code"] == "path_outside_root"


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("source", ["config", "environment"])
async def test_result_text_json_restores_the_json_text(repo: Path, mode: str, source: str) -> None:
    env = {"REPO_SANDBOX_SERVER_RESULT_TEXT": "json"} if source == "environment" else {}
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(repo)}
    if source == "config":
        overrides[("server", "result_text")] = "json"
    workspace = Workspace(load_settings(None, env=env, overrides=overrides))
    try:
        async with Client(build_server(workspace), mode=mode) as client:  # pyright: ignore[reportArgumentType]
            for tool, arguments in (("search_text", {"pattern": "cache"}), ("read_file", {"path": "b.py"})):
                text, structured, _ = await text_of(client, tool, arguments)
                assert json.loads(text) == structured
    finally:
        workspace.close()


# -- sizes: what the model pays for ----------------------------------------------------------------


CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus.py"


@pytest.fixture(scope="module")
def stdlib() -> Path:
    """The benchmark's copy of the stdlib (`bench/corpus.py`), made once in ~/.cache/repo-sandbox-bench."""
    spec = importlib.util.spec_from_file_location("bench_corpus", CORPUS)
    assert spec is not None and spec.loader is not None
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    return corpus.stdlib_corpus()


async def test_the_stdlib_cache_search_costs_at_most_5_percent_over_rg_n(stdlib: Path) -> None:
    pattern = r"def \w+_cache"
    reference = output([rg(), "-n", pattern], stdlib)
    async with connect(stdlib, "auto") as client:
        text, structured, _ = await text_of(client, "search_text", {"pattern": pattern, "limit": 1000})
    assert structured["total_matches"] == reference.count(b"\n") and not structured["truncated"]
    assert len(text.encode()) <= 1.05 * len(reference), (len(text.encode()), len(reference))


async def test_reading_200_lines_costs_at_most_2_percent_over_cat_n(stdlib: Path) -> None:
    reference = output(["cat", "-n"], stdlib, output(["head", "-n", "200", "argparse.py"], stdlib))
    async with connect(stdlib, "auto") as client:
        text, structured, _ = await text_of(client, "read_file", {"path": "argparse.py", "limit": 200})
    assert text.startswith(reference.decode()) and structured["end_line"] == 200
    assert len(text.encode()) <= 1.02 * len(reference), (len(text.encode()), len(reference))


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_list_is_lean(repo: Path, mode: str) -> None:
    async with connect(repo, mode) as client:
        with anyio.fail_after(10):
            listing = await client.list_tools()
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listing.tools]
    assert {tool["name"] for tool in tools} == {
        "search_files",
        "read_file",
        "search_text",
        "count_lines",
        "execute_bash",
    }
    compact = json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)
    assert len(compact) <= 15_000, len(compact)
    read = [{key: tool[key] for key in ("name", "description", "inputSchema")} for tool in tools]
    assert len(json.dumps(read, separators=(",", ":"), ensure_ascii=False)) <= 9_000
    assert '"title":' not in json.dumps([tool["inputSchema"] for tool in tools])  # pydantic's titles are gone
