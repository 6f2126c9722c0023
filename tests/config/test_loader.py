"""Configuration: the example file documents every key with its default; bad input names file and key."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from repo_sandbox.config.loader import ConfigError, load_settings
from repo_sandbox.config.model import Settings

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.toml"


def test_example_config_lists_every_key_with_its_default() -> None:
    example = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    defaults = Settings().model_dump(mode="json")
    assert example == defaults


def test_example_config_has_a_comment_above_every_key() -> None:
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        if line and line[0].isalpha() and "=" in line:
            assert lines[number - 1].startswith("#"), f"key without a comment: {line}"


def test_example_config_loads(tmp_path: Path) -> None:
    settings = load_settings(EXAMPLE, env={})
    assert Path(settings.workspace.root) == EXAMPLE.parent


def test_unknown_key_is_rejected_naming_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[limits]\nmax_output_byte = 10\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config, env={})
    assert str(config) in str(info.value)
    assert "max_output_byte" in str(info.value)
    assert "unknown key" in str(info.value)


def test_unknown_section_is_rejected(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[limitz]\nx = 1\n")
    with pytest.raises(ConfigError, match="limitz"):
        load_settings(config, env={})


def test_precedence_is_flags_then_env_then_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[limits]\nmax_output_bytes = 10000\nmax_results = 50\nmax_line_chars = 100\n")
    env = {"REPO_SANDBOX_LIMITS_MAX_RESULTS": "60", "REPO_SANDBOX_LIMITS_MAX_LINE_CHARS": "200"}
    settings = load_settings(config, env=env, overrides={("limits", "max_line_chars"): 300}, cwd=tmp_path)
    assert settings.limits.max_output_bytes == 10000
    assert settings.limits.max_results == 60
    assert settings.limits.max_line_chars == 300


def test_env_list_accepts_json_and_commas(tmp_path: Path) -> None:
    json_env = {"REPO_SANDBOX_WORKSPACE_EXTRA_DENY": '["*.secret", "private/"]', "REPO_SANDBOX_WORKSPACE_ROOT": "."}
    comma_env = {"REPO_SANDBOX_WORKSPACE_EXTRA_DENY": "*.secret, private/", "REPO_SANDBOX_WORKSPACE_ROOT": "."}
    for env in (json_env, comma_env):
        assert load_settings(None, env=env, cwd=tmp_path).workspace.extra_deny == ["*.secret", "private/"]


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="REPO_SANDBOX_LIMITS_MAX_RESULTS"):
        load_settings(None, env={"REPO_SANDBOX_LIMITS_MAX_RESULTS": "lots"}, cwd=tmp_path)


def test_unknown_env_key_in_a_known_section_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="REPO_SANDBOX_LIMITS_NOPE"):
        load_settings(None, env={"REPO_SANDBOX_LIMITS_NOPE": "1"}, cwd=tmp_path)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("REPO_SANDBOX_LIMIT_MAX_RESULTS", "REPO_SANDBOX_LIMITS_MAX_RESULTS"),
        ("REPO_SANDBOX_AUDITS_PATH", "REPO_SANDBOX_AUDIT_PATH"),
        ("REPO_SANDBOX_WORKSPACES_ROOT", "REPO_SANDBOX_WORKSPACE_ROOT"),
        ("REPO_SANDBOX_GAURD_FAILURE_THRESHOLD", "REPO_SANDBOX_GUARD_FAILURE_THRESHOLD"),
    ],
)
def test_a_misspelt_section_in_an_env_name_is_refused_with_the_name_meant(
    tmp_path: Path, name: str, suggestion: str
) -> None:
    with pytest.raises(ConfigError, match=f"{name}: unknown section .*did you mean {suggestion}"):
        load_settings(None, env={name: "1"}, cwd=tmp_path)


@pytest.mark.parametrize(
    "name", ["REPO_SANDBOX_TOKEN", "REPO_SANDBOX_STATE_KEY", "REPO_SANDBOX_CALL_ID", "REPO_SANDBOX_TEST_X"]
)
def test_other_repo_sandbox_variables_are_not_config_keys(tmp_path: Path, name: str) -> None:
    assert load_settings(None, env={name: "x" * 40}, cwd=tmp_path).limits.max_results > 0


def test_root_that_is_not_a_directory_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load_settings(None, env={}, overrides={("workspace", "root"): str(tmp_path / "missing")}, cwd=tmp_path)


def test_relative_root_in_file_is_resolved_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "repo").mkdir()
    config = tmp_path / "conf" / "c.toml"
    config.write_text('[workspace]\nroot = "../repo"\n')
    assert load_settings(config, env={}, cwd=Path("/")).workspace.root == str((tmp_path / "repo").resolve())


def test_invalid_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[limits\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings(config, env={})


def test_default_timeout_above_max_is_rejected(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[limits]\ndefault_timeout_s = 200\n")
    with pytest.raises(ConfigError, match="default_timeout_s"):
        load_settings(config, env={}, cwd=tmp_path)


def test_env_table_accepts_a_json_object(tmp_path: Path) -> None:
    rule = {"cksum": {"flags": ["-b"], "allow_examples": ["cksum -b README.md"]}}
    env = {"REPO_SANDBOX_EXEC_ALLOW": "cat,cksum", "REPO_SANDBOX_EXEC_RULES": json.dumps(rule)}
    settings = load_settings(None, env=env, cwd=tmp_path)
    assert settings.exec.allow == ["cat", "cksum"]
    assert settings.exec.rules["cksum"].flags == ["-b"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{not json", "invalid JSON object"),
        ('["cksum"]', "valid dictionary"),
        ('{"cksum": {"flag": ["-b"]}}', "rules.cksum.flag: unknown key"),
    ],
)
def test_bad_env_table_names_the_variable(tmp_path: Path, value: str, message: str) -> None:
    env = {"REPO_SANDBOX_EXEC_ALLOW": "cat,cksum", "REPO_SANDBOX_EXEC_RULES": value}
    with pytest.raises(ConfigError, match="REPO_SANDBOX_EXEC_RULES") as info:
        load_settings(None, env=env, cwd=tmp_path)
    assert message in str(info.value)


def test_every_key_of_every_section_can_be_set_from_the_environment(tmp_path: Path) -> None:
    defaults = Settings().model_dump(mode="json")
    for section, values in defaults.items():
        for key, default in values.items():
            value = str(tmp_path) if (section, key) == ("workspace", "root") else default
            raw = value if isinstance(value, str) else json.dumps(value)
            name = f"REPO_SANDBOX_{section.upper()}_{key.upper()}"
            settings = load_settings(None, env={name: raw}, cwd=tmp_path)
            assert settings.model_dump(mode="json")[section][key] == value, name
