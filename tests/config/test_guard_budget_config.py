"""[guard] and [budget]: env overrides, bounds, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo_sandbox.config.loader import ConfigError, load_settings


def test_guard_and_budget_keys_take_env_overrides(tmp_path: Path) -> None:
    env = {
        "REPO_SANDBOX_GUARD_FAILURE_THRESHOLD": "5",
        "REPO_SANDBOX_GUARD_SIMILARITY": "0.9",
        "REPO_SANDBOX_GUARD_RECOVERY_S": "60",
        "REPO_SANDBOX_BUDGET_MAX_CALLS": "0",
        "REPO_SANDBOX_BUDGET_MAX_EXEC_S": "12.5",
    }
    settings = load_settings(None, env=env, cwd=tmp_path)
    assert settings.guard.failure_threshold == 5
    assert settings.guard.similarity == 0.9
    assert settings.guard.recovery_s == 60.0
    assert settings.budget.max_calls == 0
    assert settings.budget.max_exec_s == 12.5


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("REPO_SANDBOX_GUARD_FAILURE_THRESHOLD", "0"),
        ("REPO_SANDBOX_GUARD_SIMILARITY", "1.5"),
        ("REPO_SANDBOX_GUARD_SIMILARITY", "0"),
        ("REPO_SANDBOX_GUARD_WINDOW_S", "-1"),
        ("REPO_SANDBOX_GUARD_REPEAT_THRESHOLD", "0"),
        ("REPO_SANDBOX_BUDGET_MAX_OUTPUT_BYTES", "-1"),
        ("REPO_SANDBOX_BUDGET_MAX_CALLS", "many"),
        ("REPO_SANDBOX_GUARD_THRESHOLD", "3"),
    ],
)
def test_bad_guard_or_budget_values_are_rejected_naming_the_variable(tmp_path: Path, variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_settings(None, env={variable: value}, cwd=tmp_path)
