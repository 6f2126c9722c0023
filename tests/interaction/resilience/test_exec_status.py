"""repo-sandbox://status and repo-sandbox://policy name the OS sandbox that execute_bash results report,
through the SDK client; unsandboxed or unusable execute_bash is said loudly (`warning`)."""

from __future__ import annotations

import pytest

from exec_support import os_backends
from repo_sandbox.exec import sandbox as sandbox_module
from repo_sandbox.exec import selection as selection_module
from repo_sandbox.testing import Mode, ServerFactory, open_session

pytestmark = pytest.mark.anyio


@pytest.mark.slow
@pytest.mark.parametrize("requested", ["auto", *os_backends(), "none"])
async def test_status_names_the_backend_that_results_report(
    make_server: ServerFactory, era: Mode, requested: str
) -> None:
    async with open_session(make_server(exec={"sandbox": requested}), era) as session:
        result = await session.call("execute_bash", {"command": "echo hello"})
        status = (await session.status())["exec"]
        policy = (await session.resource("repo-sandbox://policy"))["exec"]
    expected = os_backends()[0] if requested == "auto" else requested
    assert result["stdout"] == "hello\n"
    assert result["sandbox"] == status["sandbox"] == policy["sandbox"] == sandbox_module.Backend(expected).os_layer
    assert status["sandbox_backend"] == policy["sandbox_backend"] == expected
    assert status["sandbox_requested"] == requested
    assert status["tried"][expected].startswith("ok")
    assert status["rejected"] == {}
    assert status["unsandboxed"] is (expected == "none")
    assert status["denied_names"].startswith(
        {"none": "unprotected", "landlock": "unlistable"}.get(expected, "invisible")
    )
    if expected == "none":
        assert "WITHOUT an OS sandbox" in status["warning"]
        assert "exec.sandbox is set to 'none'" in status["warning"]
    else:
        assert "warning" not in status
    assert policy["programs"]["wc"]["decision"] == "allow"
    assert "programs" not in status


async def test_auto_fallback_to_none_is_reported_with_the_reasons(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection_module, "_probes", {})
    monkeypatch.setattr(sandbox_module, "_probe_one", lambda backend, network: f"{backend}: refused here")
    async with open_session(make_server(), "auto") as session:
        result = await session.call("execute_bash", {"command": "echo hello"})
        status = (await session.status())["exec"]
    assert result["sandbox"] == status["sandbox"] == "none"
    assert status["unsandboxed"] is True
    assert status["rejected"] == {
        "bwrap": "bwrap: refused here",
        "bwrap-noproc": "bwrap-noproc: refused here",
        "landlock": "landlock: refused here",
    }
    assert "no OS sandbox works here" in status["warning"]


async def test_configured_backend_that_does_not_work_is_reported_as_unavailable(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection_module, "_probes", {})
    monkeypatch.setattr(sandbox_module, "_probe_one", lambda backend, network: "No permissions to create namespace")
    async with open_session(make_server(exec={"sandbox": "bwrap"}), "legacy") as session:
        refused = await session.call("execute_bash", {"command": "echo hello"})
        status = (await session.status())["exec"]
    assert refused["code"] == "sandbox_failed"
    assert status["sandbox"] is None
    assert status["unsandboxed"] is True
    assert status["rejected"] == {"bwrap": "No permissions to create namespace"}
    assert "execute_bash is unavailable" in status["warning"]


async def test_disabled_execute_bash_is_reported_without_probing(make_server: ServerFactory, era: Mode) -> None:
    async with open_session(make_server(exec={"enabled": False}), era) as session:
        listed = await session.tool_descriptions()
        refused = await session.call("execute_bash", {"command": "echo hello"})
        misspelt = await session.call("read_fil", {"path": "README.md"})
        status = (await session.status())["exec"]
        policy = await session.resource("repo-sandbox://policy")
    assert "execute_bash" not in listed
    assert "read_file" in listed
    assert refused["code"] == "command_not_allowed"
    assert misspelt["hint"] == "Use one of: count_lines, read_file, search_files, search_text."
    assert {"name": "execute_bash", "read_only": False, "available": False} in policy["tools"]
    assert {"name": "read_file", "read_only": True, "available": True} in policy["tools"]
    assert status == {"enabled": False, "sandbox": None, "note": "execute_bash is disabled (exec.enabled = false)."}
