"""[audit] configuration: env overrides, the TRACE_SANITIZE switch (strict, never fail-open), path resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repo_sandbox.audit.log import AuditLog
from repo_sandbox.config.loader import ConfigError, load_settings


def test_defaults_are_off_with_redaction_on(tmp_path: Path) -> None:
    audit = load_settings(None, env={}, cwd=tmp_path).audit
    assert (audit.path, audit.redact, audit.redact_output) == ("", True, True)


def test_env_sets_the_audit_path_relative_to_the_working_directory(tmp_path: Path) -> None:
    env = {"REPO_SANDBOX_AUDIT_PATH": "logs/audit.jsonl", "REPO_SANDBOX_AUDIT_MAX_BYTES": "4096"}
    audit = load_settings(None, env=env, cwd=tmp_path).audit
    assert audit.path == str(tmp_path / "logs" / "audit.jsonl")
    assert audit.max_bytes == 4096


def test_stderr_and_off_are_kept_as_they_are(tmp_path: Path) -> None:
    for value in ("-", ""):
        assert load_settings(None, env={"REPO_SANDBOX_AUDIT_PATH": value}, cwd=tmp_path).audit.path == value


def test_a_relative_path_in_the_file_is_resolved_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "c.toml"
    config.write_text('[workspace]\nroot = ".."\n[audit]\npath = "audit.jsonl"\n')
    assert load_settings(config, env={}, cwd=Path("/")).audit.path == str(tmp_path / "conf" / "audit.jsonl")


@pytest.mark.parametrize(
    ("env", "redact"),
    [
        ({"TRACE_SANITIZE": "false"}, False),
        ({"TRACE_SANITIZE": "0"}, False),
        ({"TRACE_SANITIZE": "true"}, True),
        ({"TRACE_SANITIZE": " TRUE "}, True),
        ({"TRACE_SANITIZE": "false", "REPO_SANDBOX_AUDIT_REDACT": "true"}, True),
        ({"REPO_SANDBOX_AUDIT_REDACT": "no"}, False),
    ],
)
def test_trace_sanitize_switches_redaction_and_the_canonical_name_wins(
    tmp_path: Path, env: dict[str, str], redact: bool
) -> None:
    assert load_settings(None, env=env, cwd=tmp_path).audit.redact is redact


@pytest.mark.parametrize("value", ["flase", "off-ish", "", "disabled"])
def test_an_unclear_trace_sanitize_value_is_an_error_not_off(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="TRACE_SANITIZE"):
        load_settings(None, env={"TRACE_SANITIZE": value}, cwd=tmp_path)


def test_trace_sanitize_false_really_writes_events_unredacted(tmp_path: Path) -> None:
    settings = load_settings(None, env={"TRACE_SANITIZE": "false", "REPO_SANDBOX_AUDIT_PATH": "a.jsonl"}, cwd=tmp_path)
    log = AuditLog(settings.audit)
    log.emit({"arguments": {"password": "hunter22-plain"}})
    assert log.close()
    assert json.loads((tmp_path / "a.jsonl").read_text())["arguments"] == {"password": "hunter22-plain"}
    assert log.health()["redact"] is False


def test_unknown_audit_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="REPO_SANDBOX_AUDIT_ROTATE"):
        load_settings(None, env={"REPO_SANDBOX_AUDIT_ROTATE": "1"}, cwd=tmp_path)
