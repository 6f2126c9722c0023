"""execute_bash behaviour: limits, cancellation, isolation, sandbox selection, approvals, graded refusals."""

from __future__ import annotations

import json
import logging
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from exec_support import HOST_ENV_SECRET, auto_os_layer, os_backends, tagged_processes, write
from repo_sandbox.calls import CallContext
from repo_sandbox.exec import sandbox as sandbox_module
from repo_sandbox.exec import selection as selection_module
from repo_sandbox.exec import service as service_module
from repo_sandbox.policy.exec_model import DEFAULT_ALLOW
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.runtime.pipeline import CallOutcome
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

TEST_RULES: dict[str, Any] = {
    "python3": {"any_arguments": True},
}
ALL_BACKENDS = [*os_backends(), "none"]


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / "big.txt", "".join(f"line {n}\n" for n in range(1, 20001)))
    write(root / "README.md", "hello\n")
    write(root / ".env", "API_KEY=FIRST-SECRET\n")
    write(tmp_path / "outside.txt", "outside\n")
    return root


def make_workspace(make_settings: Any, root: Path, backend: str, **exec_config: Any) -> Workspace:
    config: dict[str, Any] = {"sandbox": backend, "allow": [*DEFAULT_ALLOW, *TEST_RULES], "rules": TEST_RULES}
    config.update(exec_config)
    return Workspace(make_settings(root, exec=config, limits={"max_output_bytes": 16384}))


@pytest.fixture
def open_workspace(make_settings: Any, plain: Path) -> Iterator[Callable[..., Workspace]]:
    opened: list[Workspace] = []

    def factory(backend: str, **exec_config: Any) -> Workspace:
        workspace = make_workspace(make_settings, plain, backend, **exec_config)
        opened.append(workspace)
        return workspace

    yield factory
    for workspace in opened:
        workspace.close()


async def call(workspace: Workspace, command: str, session: str | None = None, **arguments: Any) -> CallOutcome:
    context = CallContext(session_id=session or uuid.uuid4().hex[:12], approve=arguments.pop("approve", None))
    with anyio.fail_after(30):
        return await build_pipeline(workspace, TOOLS).call("execute_bash", {"command": command, **arguments}, context)


# -- limits -------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("backend", ALL_BACKENDS)
async def test_timeout_kills_everything_and_returns_the_partial_output(
    open_workspace: Callable[..., Workspace], backend: str
) -> None:
    session = uuid.uuid4().hex[:12]
    command = "python3 -c 'import time; print(\"partial\", flush=True); time.sleep(100)' | cat"
    outcome = await call(open_workspace(backend), command, session, timeout=1)
    error = outcome.payload["error"]
    assert error["code"] == "timeout"
    assert error["details"]["stdout"] == "partial\n"
    assert error["details"]["sandbox"] == sandbox_module.Backend(backend).os_layer
    assert outcome.duration_ms < 4000
    assert tagged_processes(session) == []


@pytest.mark.parametrize("backend", ALL_BACKENDS)
async def test_output_is_capped_keeping_head_and_tail(open_workspace: Callable[..., Workspace], backend: str) -> None:
    outcome = await call(open_workspace(backend), "cat big.txt")
    result = outcome.payload
    assert result["stdout_truncated"] is True
    assert result["stdout"].startswith("line 1\nline 2\n")
    assert result["stdout"].endswith("line 19999\nline 20000\n")
    assert "bytes omitted by repo-sandbox" in result["stdout"]
    assert len(json.dumps(result)) <= 16384


@pytest.mark.parametrize("backend", ALL_BACKENDS)
async def test_client_cancellation_kills_every_process_of_the_call(
    open_workspace: Callable[..., Workspace], backend: str
) -> None:
    workspace = open_workspace(backend)
    session = uuid.uuid4().hex[:12]
    command = "python3 -c 'import os, time\nif os.fork() == 0:\n    os.setsid()\ntime.sleep(100)' | sleep 100"
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(call, workspace, command, session)
            for _ in range(1000):  # until the pipeline and its daemonised grandchild are up
                if len(tagged_processes(session)) >= 3:
                    break
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()
    assert tagged_processes(session) == []


@pytest.mark.parametrize("backend", ALL_BACKENDS)
async def test_environment_is_built_from_scratch(
    open_workspace: Callable[..., Workspace], backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", HOST_ENV_SECRET)
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent.so")
    outcome = await call(open_workspace(backend), "jq -n env")
    env = json.loads(outcome.payload["stdout"])
    assert set(env) <= {"PATH", "LANG", "HOME", "TMPDIR", "PWD", "REPO_SANDBOX_CALL"}
    assert env["PATH"] == "/usr/bin:/bin"
    assert HOST_ENV_SECRET not in outcome.payload["stdout"]


# -- isolation (the OS layer) ---------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", os_backends())
async def test_repository_is_read_only_and_tmp_is_private(
    open_workspace: Callable[..., Workspace], backend: str, plain: Path
) -> None:
    script = (
        'import os, tempfile\np = os.path.join(tempfile.gettempdir(), "scratch")\nopen(p, "w").write("ok")\n'
        'print(open(p).read())\ntry:\n    open("README.md", "a").write("x")\nexcept OSError as e:\n'
        "    print(type(e).__name__)"
    )
    outcome = await call(open_workspace(backend), f"python3 -c '{script}'")
    assert outcome.payload["stdout"].split() == ["ok", "PermissionError" if backend == "landlock" else "OSError"]
    assert (plain / "README.md").read_text() == "hello\n"


def existing(paths: list[str]) -> list[str]:
    return [path for path in paths if Path(path).exists()]


@pytest.mark.parametrize("backend", [b for b in ALL_BACKENDS if not b.startswith("bwrap")])
async def test_the_private_tmp_of_a_launcher_call_is_removed_whether_or_not_it_was_written(
    open_workspace: Callable[..., Workspace], backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = open_workspace(backend)
    created: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args: Any, **kwargs: Any) -> str:
        created.append(real_mkdtemp(*args, **kwargs))
        return created[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recording_mkdtemp)
    writes = 'import os, tempfile\nopen(os.path.join(tempfile.gettempdir(), "left"), "w").write("x")'
    for command in ("wc -l README.md", f"python3 -c '{writes}'"):
        outcome = await call(workspace, command)
        assert not outcome.is_error, outcome.payload
    calls = [path for path in created if "repo-sandbox-exec-" in path]
    assert len(calls) == 2
    assert existing(calls) == []


@pytest.mark.parametrize("backend", os_backends())
async def test_network_is_unreachable(open_workspace: Callable[..., Workspace], backend: str) -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        script = f'import socket\ntry:\n    socket.create_connection(("127.0.0.1", {port}), 2)\n    print("connected")\nexcept OSError:\n    print("blocked")'
        outcome = await call(open_workspace(backend), f"python3 -c '{script}'")
    assert outcome.payload["stdout"] == "blocked\n"


@pytest.mark.slow
@pytest.mark.parametrize("backend", os_backends())
async def test_denied_files_are_unreadable_and_new_ones_are_hidden_after_a_rescan(
    open_workspace: Callable[..., Workspace], backend: str, plain: Path
) -> None:
    workspace = open_workspace(backend)
    first = await call(workspace, "grep -r SECRET .")
    assert "FIRST-SECRET" not in json.dumps(first.payload)
    write(plain / "sub" / "notes.txt", "visible\n")
    listed = await call(workspace, "ls -a sub")
    write(plain / "sub" / ".env.local", "LATE-SECRET\n")
    second = await call(workspace, "grep -r SECRET .")
    assert "LATE-SECRET" not in json.dumps(second.payload)
    relisted = await call(workspace, "ls -a sub")
    assert listed.payload["stdout"] == ".\n..\nnotes.txt\n"
    if backend == "landlock":  # cannot hide a name, so it does not list a directory holding one
        assert "Permission denied" in relisted.payload["stderr"] and relisted.payload["stdout"] == ""
    else:  # the directory is rebuilt without the new name (the watch saw it and the mount plan was redone)
        assert relisted.payload["stdout"] == ".\n..\nnotes.txt\n"
    script = 'try:\n    print(repr(open(".env").read()))\nexcept OSError as e:\n    print(type(e).__name__)'
    direct = (await call(workspace, f"python3 -c '{script}'")).payload["stdout"]
    assert direct == ("PermissionError\n" if backend == "landlock" else "FileNotFoundError\n")  # no such name


# -- sandbox selection ------------------------------------------------------------------------------------------


async def test_none_backend_is_reported_and_logged_loudly(
    open_workspace: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(selection_module, "_probes", {})
    with caplog.at_level(logging.WARNING, logger="repo_sandbox"):
        outcome = await call(open_workspace("none"), "true")
    assert outcome.payload["sandbox"] == "none"
    assert "WITHOUT an OS sandbox" in caplog.text


async def test_configured_backend_that_does_not_work_fails_closed(
    open_workspace: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection_module, "_probes", {})
    monkeypatch.setattr(sandbox_module, "_probe_one", lambda backend, network: "No permissions to create namespace")
    outcome = await call(open_workspace("bwrap"), "true")
    assert outcome.error_code == "sandbox_failed"
    assert outcome.payload["error"]["details"]["tried"] == {"bwrap": "No permissions to create namespace"}


async def test_auto_falls_back_to_none_when_nothing_works(
    open_workspace: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection_module, "_probes", {})
    monkeypatch.setattr(sandbox_module, "_probe_one", lambda backend, network: "refused")
    outcome = await call(open_workspace("auto"), "true")
    assert outcome.payload["sandbox"] == "none"
    info = selection_module.sandbox_info("auto", False)
    assert info.degraded and set(info.tried) == {"bwrap", "bwrap-noproc", "landlock", "none"}


async def test_auto_picks_the_first_working_backend(open_workspace: Callable[..., Workspace]) -> None:
    outcome = await call(open_workspace("auto"), "true")
    assert outcome.payload["sandbox"] == auto_os_layer()


# -- approvals, refusals ---------------------------------------------------------------------------------------


def approver(answer: bool, seen: list[tuple[str, dict[str, Any]]]) -> Callable[..., Awaitable[bool]]:
    async def approve(command: str, details: dict[str, Any]) -> bool:
        seen.append((command, details))
        return answer

    return approve


async def test_ask_programs_fail_closed_without_an_approval_channel(open_workspace: Callable[..., Workspace]) -> None:
    allow = [p for p in DEFAULT_ALLOW if p != "wc"]
    workspace = open_workspace("none", allow=allow, ask=["wc"])
    outcome = await call(workspace, "cat README.md | wc -l")
    assert outcome.error_code == "approval_required"
    assert outcome.payload["error"]["details"]["programs"] == ["wc"]
    seen: list[tuple[str, dict[str, Any]]] = []
    denied = await call(workspace, "wc -l README.md", approve=approver(False, seen))
    assert denied.error_code == "approval_denied"
    approved = await call(workspace, "wc -l README.md", approve=approver(True, seen))
    assert approved.payload["stdout"] == "1 README.md\n"
    assert seen[0] == ("wc -l README.md", {"programs": ["wc"], "rule": "exec.ask", "cwd": "."})


async def test_a_list_is_approved_once_before_any_element_runs(open_workspace: Callable[..., Workspace]) -> None:
    allow = [p for p in DEFAULT_ALLOW if p != "wc"]
    workspace = open_workspace("none", allow=allow, ask=["wc"])
    refused = await call(workspace, "sleep 5; false || wc -l README.md")
    assert refused.error_code == "approval_required"
    assert refused.duration_ms < 4000  # nothing ran
    seen: list[tuple[str, dict[str, Any]]] = []
    command = "cat README.md >/dev/null && wc -l README.md; false && cd nosuch; wc -c README.md"
    approved = await call(workspace, command, approve=approver(True, seen))
    assert approved.payload["stdout"] == "1 README.md\n6 README.md\n"
    assert [step["exit_code"] for step in approved.payload["steps"]] == [0, 0, 1, None, 0]
    assert seen == [(command, {"programs": ["wc"], "rule": "exec.ask", "cwd": "."})]


@pytest.mark.parametrize(
    ("command", "arguments", "exec_config", "code"),
    [
        ("true", {}, {"enabled": False}, "command_not_allowed"),
        ("true", {"timeout": 500}, {}, "invalid_arguments"),
        ("true", {"cwd": "../"}, {}, "path_outside_root"),
        ("true", {"cwd": "README.md"}, {}, "not_a_directory"),
        ("true", {"cwd": "missing"}, {}, "not_found"),
        ("ghostprog x", {}, {"allow": ["ghostprog"], "rules": {"ghostprog": {"operands": "strings"}}},
         "command_not_allowed"),
        ("ls & ls", {}, {}, "command_parse_error"),
        ("cat .env", {}, {}, "path_denied"),
    ],
)  # fmt: skip
async def test_graded_refusals(
    open_workspace: Callable[..., Workspace], command: str, arguments: dict[str, Any],
    exec_config: dict[str, Any], code: str,
) -> None:  # fmt: skip
    outcome = await call(open_workspace("none", **exec_config), command, **arguments)
    assert outcome.error_code == code, outcome.payload


def test_status_reports_the_sandbox_and_the_programs(open_workspace: Callable[..., Workspace]) -> None:
    status = service_module.exec_service(open_workspace("auto")).report(programs=True)
    assert status["sandbox"] == auto_os_layer()
    assert "warning" not in status
    assert status["programs"]["sed"]["summary"].startswith("stream editor")
    assert status["programs"]["python3"]["decision"] == "allow"
