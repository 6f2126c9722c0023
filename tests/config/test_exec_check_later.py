"""Serving leaves the command policy's check for later (it loads the whole policy); the policy is still
checked before any command is judged, so a policy whose examples do not hold never runs a command."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo_sandbox.config.loader import ConfigError, load_settings
from repo_sandbox.policy.commands import CommandPolicy
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

FAILING_RULE = (
    '[exec]\nallow = ["cat", "cksum"]\n'
    '[exec.rules.cksum]\nflags = ["-b"]\nallow_examples = ["cksum -b a"]\ndeny_examples = ["cksum -b b"]\n'
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(FAILING_RULE)
    (tmp_path / "a").write_text("a\n")
    return path


def test_loading_checks_the_policy_unless_told_to_leave_it_for_later(config: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="deny example 'cksum -b b' was allowed"):
        load_settings(config, env={}, cwd=tmp_path)
    settings = load_settings(config, env={}, cwd=tmp_path, exec_check_later=True)
    with pytest.raises(ValueError, match="deny example 'cksum -b b' was allowed"):
        CommandPolicy.from_config(settings.exec)


@pytest.mark.anyio
async def test_a_policy_left_unchecked_runs_no_command(config: Path, tmp_path: Path) -> None:
    ws = Workspace(load_settings(config, env={}, cwd=tmp_path, exec_check_later=True))
    try:
        outcome = await build_pipeline(ws, TOOLS).call("execute_bash", {"command": "cksum -b a"})
    finally:
        ws.close()
    assert outcome.is_error
    assert outcome.error_code == "internal_error"
    assert "stdout" not in outcome.payload
