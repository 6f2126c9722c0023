"""The redaction processors, one by one and as the chain that runs before an event is written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from repo_sandbox.audit.events import TimeStamper, build_processors, render_json
from repo_sandbox.audit.known import KnownSecrets
from repo_sandbox.audit.redact import (
    REDACTED,
    CapValues,
    MaskSecretStrings,
    RedactSensitiveKeys,
    is_sensitive_key,
    mask_partial_ids,
    shorten_home_paths,
)

GHP = "ghp_" + "Zq9" * 12


def run_chain(event: dict[str, Any], *, redact: bool = True, max_chars: int = 2000) -> dict[str, Any]:
    for processor in build_processors(redact=redact, max_value_chars=max_chars):
        event = processor(event)
    return json.loads(render_json(event))


# Sensitive keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "password", "PASSWORD", "db_password", "passwd", "pwd", "passphrase", "secret", "client_secret",
        "secrets", "token", "access_token", "refreshToken", "GITHUB_TOKEN", "api_key", "apiKey", "X-Api-Key",
        "aws_secret_access_key", "secret_key", "private_key", "privateKey", "authorization", "Authorization",
        "auth", "cookie", "Set-Cookie", "session", "sessionId", "session_id", "credentials", "signature",
        "tool_call_id",
    ],
)  # fmt: skip
def test_value_under_a_sensitive_key_is_replaced(key: str) -> None:
    assert is_sensitive_key(key)
    event = RedactSensitiveKeys()({"arguments": {"outer": [{key: "v4lue-of-the-key"}]}})
    assert event == {"arguments": {"outer": [{key: REDACTED}]}}


@pytest.mark.parametrize(
    "key",
    ["token_count", "max_tokens", "password_field", "session_count", "sort_key", "key", "author", "auth_method",
     "oauth", "secretary", "path", "pattern", "command", "passport"],
)  # fmt: skip
def test_a_key_that_only_contains_a_sensitive_word_is_kept(key: str) -> None:
    assert not is_sensitive_key(key)
    assert RedactSensitiveKeys()({"arguments": {key: 5}}) == {"arguments": {key: 5}}


def test_whole_structures_under_a_sensitive_key_are_replaced_but_flags_and_nulls_stay() -> None:
    event = {"arguments": {"auth": {"user": "bob", "pass": "x"}, "token": None, "cookie": True, "secret": 12345}}
    assert RedactSensitiveKeys()(event) == {
        "arguments": {"auth": REDACTED, "token": None, "cookie": True, "secret": REDACTED}
    }


def test_the_events_own_session_field_is_kept_but_a_callers_session_is_not() -> None:
    event = {"session": "3f2a1b9c", "tool": "read_file", "arguments": {"session": "their-cookie-value"}}
    assert RedactSensitiveKeys()(event) == {
        "session": "3f2a1b9c",
        "tool": "read_file",
        "arguments": {"session": REDACTED},
    }


def test_replaced_values_are_remembered_and_masked_where_they_appear_bare() -> None:
    known = KnownSecrets()
    RedactSensitiveKeys(known)({"arguments": {"password": "correct-horse-battery-staple"}})
    later = MaskSecretStrings(known)({"arguments": {"pattern": "correct-horse-battery-staple"}})
    assert later == {"arguments": {"pattern": "[REDACTED:known_secret]"}}


# Partial ids, home paths, patterns in keys ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("usr_01HZX4Q9ab7c", "****ab7c"), (1234567890123, "****0123"), ("42", "***"), (None, None)],
)
def test_ids_keep_only_their_last_four_characters(value: object, expected: object) -> None:
    assert mask_partial_ids({"details": {"user_id": value}}) == {"details": {"user_id": expected}}
    assert mask_partial_ids({"details": {"projectId": value}}) == {"details": {"projectId": expected}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/home/alice/src/app.py", "~/src/app.py"),
        ("cd /home/alice && ls", "cd ~ && ls"),
        ("/root/.cache/x", "~/.cache/x"),
        ("/Users/bob/Library", "~/Library"),
        ("/var/home/alice/x", "/var/home/alice/x"),
        ("/rootfs/etc", "/rootfs/etc"),
        ("src/home/alice.py", "src/home/alice.py"),
    ],
)
def test_home_directories_are_shortened(text: str, expected: str) -> None:
    assert shorten_home_paths({"arguments": {"path": text}}) == {"arguments": {"path": expected}}


def test_secrets_in_dict_keys_are_masked() -> None:
    event = MaskSecretStrings()({"arguments": {GHP: 1}})
    assert event == {"arguments": {"[REDACTED:github_token]": 1}}


# The chain -----------------------------------------------------------------------------------------


def test_cap_runs_after_redaction_so_a_cut_never_exposes_half_a_secret() -> None:
    text = "x" * 1989 + " " + GHP + " " + "y" * 500
    arguments = run_chain({"arguments": {"pattern": text}}, max_chars=2000)["arguments"]
    assert "ghp_" not in arguments["pattern"]
    assert arguments["pattern"].endswith("more chars]")


def test_cap_bounds_strings_lists_and_depth() -> None:
    capper = CapValues(100, max_items=3, max_depth=2)
    assert capper({"a": "z" * 150}) == {"a": "z" * 100 + "...[50 more chars]"}
    assert capper({"a": [1, 2, 3, 4, 5]}) == {"a": [1, 2, 3, "...2 more items"]}
    assert capper({"a": {"b": {"c": 1}}}) == {"a": {"b": "[too deep]"}}


def test_with_redaction_off_the_event_is_written_as_it_came() -> None:
    event = {"arguments": {"password": "hunter22", "path": "/home/alice/x", "note": GHP}}
    assert run_chain(event, redact=False) == event


def test_time_stamp_is_utc_iso_with_milliseconds_and_comes_first() -> None:
    stamped = TimeStamper(lambda: 1_700_000_000.1234)({"event": "tool_call"})
    assert list(stamped) == ["ts", "event"]
    assert stamped["ts"] == "2023-11-14T22:13:20.123Z"


def test_rendered_event_is_one_line_even_with_newlines_and_odd_values() -> None:
    line = render_json({"arguments": {"text": "a\nb\r\nc\u2028", "odd": {1, 2}, "surrogate": "\ud800"}})
    assert "\n" not in line
    assert json.loads(line)["arguments"]["text"] == "a\nb\r\nc\u2028"
