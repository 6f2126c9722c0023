"""Bearer-token authentication for the network transports, and the secrets that come from the environment.

The token is compared in constant time. WebSocket clients that cannot set headers (the mcp 1.x
`websocket_client(url)`, browsers) may pass it as `?token=` on the `/ws` URL; `redact` keeps it out of logs.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import parse_qsl

from repo_sandbox.config.model import ServerConfig

MIN_TOKEN_CHARS: Final = 16
"""Shortest accepted token: a guessable token is no protection on a network port."""

QUERY_TOKEN_PARAM: Final = "token"
"""Query parameter carrying the token on `/ws` for clients that cannot set an Authorization header."""

_QUERY_TOKEN_RE: Final = re.compile(r"([?&]token=)[^&\s\"']*", re.IGNORECASE)
_BEARER_RE: Final = re.compile(r"(bearer\s+)(?!realm=)[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
REDACTED: Final = "[REDACTED]"


class StartupRefused(RuntimeError):
    """The network transport must not start with this configuration (the message says why, without secrets)."""


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach: localhost, 127.0.0.0/8, ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """Checks `Authorization: Bearer <token>` (and, where allowed, `?token=`) against the configured token."""

    def __init__(self, token: str | None) -> None:
        self._token = token.encode() if token else None

    @property
    def required(self) -> bool:
        return self._token is not None

    def _matches(self, presented: str) -> bool:
        assert self._token is not None
        # Hash both sides first so that the comparison time does not depend on the lengths either.
        return hmac.compare_digest(hashlib.sha256(presented.encode()).digest(), hashlib.sha256(self._token).digest())

    def is_authorized(self, headers: Mapping[str, str], query_string: str = "", *, allow_query: bool = False) -> bool:
        """Whether the request may pass: always when no token is configured."""
        if self._token is None:
            return True
        authorization = headers.get("authorization", "")
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip() and self._matches(value.strip()):
            return True
        if allow_query:
            for name, presented in parse_qsl(query_string, keep_blank_values=True):
                if name == QUERY_TOKEN_PARAM and presented and self._matches(presented):
                    return True
        return False


def load_token(settings: ServerConfig, env: Mapping[str, str]) -> str | None:
    """The token from the environment variable named by `[server] token_env`, or None when unset.

    Raises:
        StartupRefused: the token is too short, or missing while the address is not loopback.
    """
    token = env.get(settings.token_env, "").strip() or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise StartupRefused(f"the token in ${settings.token_env} is shorter than {MIN_TOKEN_CHARS} characters")
    if token is None and not is_loopback(settings.host):
        raise StartupRefused(
            f"refusing to serve on non-loopback address {settings.host} without a token: "
            f"set ${settings.token_env} (at least {MIN_TOKEN_CHARS} characters)"
        )
    return token


def load_request_state_keys(settings: ServerConfig, env: Mapping[str, str]) -> list[str] | None:
    """The shared key(s) sealing 2026-07-28 request state, comma-separated in `[server] request_state_key_env`."""
    raw = env.get(settings.request_state_key_env, "")
    keys = [key.strip() for key in raw.split(",") if key.strip()]
    for key in keys:
        if len(key) < MIN_TOKEN_CHARS:
            raise StartupRefused(f"a key in ${settings.request_state_key_env} is shorter than {MIN_TOKEN_CHARS} chars")
    return keys or None


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with `?token=` values, bearer credentials and the given secrets replaced by a marker."""
    text = _QUERY_TOKEN_RE.sub(rf"\g<1>{REDACTED}", text)
    text = _BEARER_RE.sub(rf"\g<1>{REDACTED}", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


class RedactingFilter(logging.Filter):
    """A log filter that redacts tokens from every record before any handler formats it."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self._secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message, self._secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def install_log_redaction(secrets: tuple[str, ...] = ()) -> None:
    """Redact tokens in everything the root handlers write (uvicorn's loggers propagate to them)."""
    log_filter = RedactingFilter(secrets)
    for handler in logging.getLogger().handlers:
        handler.addFilter(log_filter)
