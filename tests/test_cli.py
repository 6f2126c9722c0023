"""The `repo-sandbox` command: help, tools, call, check-config, and stdout kept for the protocol alone.

Each test runs the installed console script as a real process (what users and MCP clients start).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))
TIMEOUT_S = 60


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command; `env` replaces the REPO_SANDBOX_* variables of this process's environment."""
    child_env = {key: value for key, value in os.environ.items() if not key.startswith("REPO_SANDBOX_")}
    return subprocess.run(
        [REPO_SANDBOX, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={**child_env, **(env or {})},
    )


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("def main():\n    pass  # TODO\n", encoding="utf-8")
    (root / ".env").write_text("SECRET=1\n", encoding="utf-8")
    return root


def test_help_names_every_command_and_the_client_config() -> None:
    done = run("--help")
    assert done.returncode == 0, done.stderr
    for word in ("serve", "tools", "call", "check-config", "--root", '"command": "repo-sandbox"'):
        assert word in done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (["serve", "--help"], ["--root", "--config", "--transport", "/mcp", "/ws", "/healthz", "REPO_SANDBOX_TOKEN"]),
        (["--root", ".", "--help"], ["--transport", "/healthz"]),  # the default command's help
        (["check-config", "--help"], ["effective policy", "exit 0", "exit 2", "REPO_SANDBOX_<SECTION>_<KEY>"]),
        (["call", "--help"], ["(exit 0)", "(exit 1)", "Exit 2"]),
        (["tools", "--help"], ["schemas"]),
    ],
)
def test_every_command_explains_itself_in_its_help(command: list[str], words: list[str]) -> None:
    done = run(*command)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for word in words:
        assert word in text, word


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["nosuchcmd"], "unknown command 'nosuchcmd'"),
        (["chek-config", "x.toml"], "check-config"),
        (["--bogus"], "--bogus"),
        (["--root"], "--root"),
        (["serve", "--port", "abc"], "--port"),
        (["serve", "--port", "99999"], "port"),
        (["serve", "--transport", "ftp"], "--transport"),
        (["serve", "--log-level", "LOUD"], "--log-level"),
        (["call"], "tool"),
        (["check-config"], "file"),
    ],
)
def test_bad_command_lines_exit_2_naming_what_is_wrong(args: list[str], named: str) -> None:
    done = run(*args, stdin="")
    assert (done.returncode, done.stdout) == (2, "")
    assert named in done.stderr


def test_tools_prints_every_tool_with_schemas_and_annotations() -> None:
    done = run("tools")
    assert done.returncode == 0, done.stderr
    tools = {tool["name"]: tool for tool in json.loads(done.stdout)}
    # ask_user is listed here; over MCP only clients that can elicit see it
    assert set(tools) == {"search_files", "read_file", "search_text", "count_lines", "ask_user", "execute_bash"}
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object" and tool["inputSchema"]["properties"]
        assert tool["outputSchema"]["type"] == "object" and "anyOf" in tool["outputSchema"]
        assert tool["annotations"]["readOnlyHint"] is (tool["name"] != "execute_bash")


def test_call_prints_the_result_and_exits_0(small_repo: Path) -> None:
    done = run("call", "search_text", '{"pattern": "TODO"}', "--root", str(small_repo))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "matches": [{"path": "src/main.py", "line": 2, "text": "    pass  # TODO", "before": [], "after": []}],
        "files_searched": 1,
        "skipped_binary": 0,
        "skipped_too_large": 0,
        "total_matches": 1,
        "truncated": False,
        "next_offset": None,
        "redactions": 0,
    }
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("read_file", '{"path": "../etc/passwd"}', "path_outside_root"),
        ("read_file", '{"path": ".env"}', "path_denied"),
        ("read_file", '{"path": "src/main.py", "limit": 0}', "invalid_arguments"),
        ("search_text", '{"pattern": "(?<=a)b"}', "invalid_regex"),
        ("write_file", "{}", "invalid_arguments"),
        ("read_file", "[1, 2]", "invalid_arguments"),
    ],
)
def test_call_prints_the_graded_error_and_exits_1(small_repo: Path, tool: str, arguments: str, code: str) -> None:
    done = run("call", tool, arguments, "--root", str(small_repo))
    assert done.returncode == 1, done.stderr
    error: dict[str, Any] = json.loads(done.stdout)["error"]
    assert error["code"] == code
    assert set(error) == {"code", "category", "message", "retryable", "hint", "details"}
    assert "SECRET" not in done.stdout + done.stderr


def test_call_with_arguments_that_are_not_json_exits_2_on_stderr(small_repo: Path) -> None:
    done = run("call", "read_file", "{path: x}", "--root", str(small_repo))
    assert (done.returncode, done.stdout) == (2, "")
    assert "not valid JSON" in done.stderr


def test_check_config_prints_the_effective_policy(tmp_path: Path) -> None:
    config = tmp_path / "policy.toml"
    config.write_text('[limits]\nmax_output_bytes = 9000\n[workspace]\nextra_deny = ["*.secret"]\n', encoding="utf-8")
    done = run("check-config", str(config))
    assert done.returncode == 0, done.stderr
    policy = json.loads(done.stdout)
    assert policy["limits"]["max_output_bytes"] == 9000
    assert policy["workspace"]["extra_deny"] == ["*.secret"]
    assert policy["limits"]["max_line_chars"] == 2000


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[limits]\nmax_outptu_bytes = 9000\n", "max_outptu_bytes"),
        ("[limits]\nmax_output_bytes = 10\n", "max_output_bytes"),
        ("[nosuchsection]\nkey = 1\n", "nosuchsection"),
        ("[limits\n", "invalid TOML"),
        # what the HTTP server would refuse at start-up is refused by check-config too
        ('[server]\nallowed_hosts = ["bad host"]\n', "allowed_hosts"),
        ('[server]\nallowed_origins = ["app.example.com"]\n', "allowed_origins"),
        ('[server]\nallowed_origins = ["https://app.example.com/path"]\n', "allowed_origins"),
        ('[exec]\nallow = ["cat", "cksum"]\n', "cksum"),
        ('[exec]\nallow = ["cat"]\n[exec.rules.cat]\nflag = ["-n"]\n', "rules.cat.flag"),
    ],
)
def test_check_config_rejects_a_bad_file_naming_file_and_key(tmp_path: Path, text: str, named: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text, encoding="utf-8")
    done = run("check-config", str(config))
    assert (done.returncode, done.stdout) == (2, "")
    assert str(config) in done.stderr and named in done.stderr


def test_check_config_applies_the_environment_and_names_a_bad_variable(tmp_path: Path) -> None:
    config = tmp_path / "policy.toml"
    config.write_text('[guard]\nfailure_threshold = 4\n[audit]\npath = "audit.jsonl"\n', encoding="utf-8")
    env = {"REPO_SANDBOX_GUARD_FAILURE_THRESHOLD": "7", "REPO_SANDBOX_AUDIT_PATH": "-"}
    done = run("check-config", str(config), env=env)
    assert done.returncode == 0, done.stderr
    policy = json.loads(done.stdout)
    assert (policy["guard"]["failure_threshold"], policy["audit"]["path"]) == (7, "-")
    bad = run("check-config", str(config), env={"REPO_SANDBOX_GUARD_FAILURE_THRESHOLD": "many"})
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "REPO_SANDBOX_GUARD_FAILURE_THRESHOLD" in bad.stderr and "failure_threshold" in bad.stderr


@pytest.mark.parametrize(
    ("flag", "env", "served"),
    [
        pytest.param(True, True, "flag.py", id="flag-over-environment-and-file"),
        pytest.param(False, True, "env.py", id="environment-over-file"),
        pytest.param(False, False, "file.py", id="file-over-default"),
    ],
)
def test_the_root_comes_from_flags_then_environment_then_file(
    tmp_path: Path, flag: bool, env: bool, served: str
) -> None:
    for name in ("flag", "env", "file"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.py").write_text("x = 1\n", encoding="utf-8")
    config = tmp_path / "policy.toml"
    config.write_text('[workspace]\nroot = "file"\n', encoding="utf-8")
    args = ["call", "search_files", '{"pattern": "*.py"}', "--config", str(config)]
    done = run(
        *args,
        *(["--root", str(tmp_path / "flag")] if flag else []),
        env={"REPO_SANDBOX_WORKSPACE_ROOT": str(tmp_path / "env")} if env else None,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"] == [served]


def test_a_root_that_is_not_a_directory_is_a_configuration_error(tmp_path: Path) -> None:
    done = run("--root", str(tmp_path / "missing"))
    assert (done.returncode, done.stdout) == (2, "")
    assert "not a directory" in done.stderr


def test_serve_writes_only_protocol_messages_to_stdout_even_when_logging_debug(small_repo: Path) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "../x"}},
        },
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    with subprocess.Popen(
        [REPO_SANDBOX, "serve", "--root", str(small_repo), "--log-level", "DEBUG"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(stdin)
            process.stdin.flush()
            replies: dict[int, dict[str, Any]] = {}
            while len(replies) < 3:
                line = process.stdout.readline()
                assert line, "the server closed stdout early"
                reply = json.loads(line)  # every stdout line is one JSON-RPC message
                assert reply["jsonrpc"] == "2.0"
                replies[reply["id"]] = reply
            rest, stderr = process.communicate(timeout=TIMEOUT_S)  # closes stdin: the server exits
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0
    assert rest.strip() == ""
    assert replies[1]["result"]["serverInfo"]["name"] == "repo-sandbox"
    assert len(replies[2]["result"]["tools"]) == 5
    assert replies[3]["result"]["isError"] is True
    assert replies[3]["result"]["structuredContent"]["error"]["code"] == "path_outside_root"
    assert "DEBUG" in stderr or "INFO" in stderr  # the log went to stderr


POLICY_COMMANDS = [
    pytest.param(["tools"], 0, id="tools"),
    pytest.param(["openai-tools"], 0, id="openai-tools"),
    pytest.param(["check-config"], 0, id="check-config"),
    pytest.param(["call", "search_files", '{"pattern": "*.py"}'], 0, id="call"),
    pytest.param(["ask", "where is main?"], 2, id="ask"),  # no model configured: exit 2 after loading the policy
]


@pytest.mark.parametrize(("command", "code"), POLICY_COMMANDS)
def test_every_command_that_loads_the_policy_accepts_root_and_config(
    small_repo: Path, tmp_path: Path, command: list[str], code: int
) -> None:
    config = tmp_path / "policy.toml"
    config.write_text("[limits]\nmax_output_bytes = 65536\n", encoding="utf-8")
    done = run(*command, "--root", str(small_repo), "--config", str(config))
    assert done.returncode == code, done.stderr
    assert "unrecognized arguments" not in done.stderr
    missing = run(*command, "--root", str(tmp_path / "missing"), "--config", str(config))
    assert missing.returncode == 2
    assert "--root: [workspace] root: not a directory" in missing.stderr  # the flag is applied, not just parsed


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["call", "search_files", '{"pattern": "*"}'], id="call"),
        pytest.param(["tools"], id="tools"),
        pytest.param(["openai-tools"], id="openai-tools"),
    ],
)
def test_a_closed_pipe_ends_the_output_quietly(small_repo: Path, command: list[str]) -> None:
    """`repo-sandbox call … | head`: the reader is gone before the first write."""
    child_env = {key: value for key, value in os.environ.items() if not key.startswith("REPO_SANDBOX_")}
    with subprocess.Popen(
        [REPO_SANDBOX, *command, "--root", str(small_repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()
        stderr = child.stderr.read().decode()
        code = child.wait(timeout=TIMEOUT_S)
    assert (code, stderr) == (0, "")
