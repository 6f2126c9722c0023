"""Bearer token: where it may come from, when the server refuses to start, and that logs never show it."""

from __future__ import annotations

import logging

import pytest

from repo_sandbox.config.model import ServerConfig
from repo_sandbox.transports.auth import (
    REDACTED,
    BearerAuth,
    RedactingFilter,
    StartupRefused,
    is_loopback,
    load_request_state_keys,
    load_token,
    redact,
)

TOKEN = "s3cret-token-0123456789"


@pytest.mark.parametrize(
    ("headers", "query", "allow_query", "authorized"),
    [
        ({"authorization": f"Bearer {TOKEN}"}, "", False, True),
        ({"authorization": f"bearer {TOKEN}"}, "", False, True),
        ({"authorization": f"Bearer  {TOKEN} "}, "", False, True),
        ({}, f"token={TOKEN}", True, True),
        ({}, f"a=1&token={TOKEN}", True, True),
        # refused
        ({}, "", False, False),
        ({}, f"token={TOKEN}", False, False),  # query tokens only where the transport allows them (/ws)
        ({"authorization": f"Basic {TOKEN}"}, "", False, False),
        ({"authorization": TOKEN}, "", False, False),
        ({"authorization": f"Bearer {TOKEN[:-1]}"}, "", False, False),
        ({"authorization": f"Bearer {TOKEN}0"}, "", False, False),
        ({"authorization": "Bearer"}, "", False, False),
        ({}, "token=", True, False),
        ({}, f"TOKEN={TOKEN}", True, False),
    ],
)
def test_bearer_auth_accepts_only_the_exact_token(
    headers: dict[str, str], query: str, allow_query: bool, authorized: bool
) -> None:
    assert BearerAuth(TOKEN).is_authorized(headers, query, allow_query=allow_query) is authorized


def test_without_a_token_everyone_is_authorized() -> None:
    assert BearerAuth(None).is_authorized({}, "") is True
    assert BearerAuth(None).required is False


@pytest.mark.parametrize(
    ("host", "env", "expected"),
    [
        ("127.0.0.1", {}, None),
        ("localhost", {}, None),
        ("::1", {}, None),
        ("127.0.0.1", {"REPO_SANDBOX_TOKEN": f"  {TOKEN}\n"}, TOKEN),
        ("0.0.0.0", {"REPO_SANDBOX_TOKEN": TOKEN}, TOKEN),
    ],
)
def test_token_is_read_from_the_configured_variable(host: str, env: dict[str, str], expected: str | None) -> None:
    assert load_token(ServerConfig(host=host), env) == expected


@pytest.mark.parametrize(
    ("host", "env", "message"),
    [
        ("0.0.0.0", {}, "without a token"),
        ("::", {}, "without a token"),
        ("192.168.1.10", {"REPO_SANDBOX_TOKEN": "   "}, "without a token"),
        ("example.com", {}, "without a token"),
        ("127.0.0.1", {"REPO_SANDBOX_TOKEN": "short"}, "shorter than 16"),
    ],
)
def test_startup_is_refused_without_a_usable_token(host: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(StartupRefused, match=message) as info:
        load_token(ServerConfig(host=host), env)
    assert "short" not in str(info.value).replace("shorter", "")  # the refusal never echoes the secret


def test_is_loopback() -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "LOCALHOST")] == [True] * 5
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "localhost.evil.com")] == [False] * 4


def test_request_state_keys_come_from_their_variable() -> None:
    settings = ServerConfig()
    assert load_request_state_keys(settings, {}) is None
    keys = load_request_state_keys(settings, {"REPO_SANDBOX_STATE_KEY": f"{TOKEN}a, {TOKEN}b"})
    assert keys == [f"{TOKEN}a", f"{TOKEN}b"]
    with pytest.raises(StartupRefused):
        load_request_state_keys(settings, {"REPO_SANDBOX_STATE_KEY": "tiny"})


@pytest.mark.parametrize(
    "line",
    [
        f'127.0.0.1:5 - "WebSocket /ws?token={TOKEN}" 101',
        f"GET /ws?a=1&token={TOKEN}&b=2",
        f"Authorization: Bearer {TOKEN}",
        f"headers={{'authorization': 'bearer {TOKEN}'}}",
        f"the token is {TOKEN}",
    ],
)
def test_redact_removes_the_token_from_log_lines(line: str) -> None:
    cleaned = redact(line, (TOKEN,))
    assert TOKEN not in cleaned
    assert REDACTED in cleaned


def test_redact_keeps_the_www_authenticate_realm() -> None:
    assert redact('www-authenticate: Bearer realm="mcp"') == 'www-authenticate: Bearer realm="mcp"'


def test_redacting_filter_rewrites_formatted_records() -> None:
    record = logging.LogRecord(
        "uvicorn.error", logging.INFO, __file__, 1, '%s - "WebSocket %s"', ("x", f"/ws?token={TOKEN}"), None
    )
    assert RedactingFilter((TOKEN,)).filter(record) is True
    assert record.getMessage() == f'x - "WebSocket /ws?token={REDACTED}"'
