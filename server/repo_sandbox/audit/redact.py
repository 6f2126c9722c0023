"""Redaction processors: each takes an audit event dict and returns it with one kind of secret removed.

They run in `audit.events.build_processors` order: sensitive keys, partial ids, secret patterns, home paths,
then the size cap (after redaction, so that a cut never hides half a secret from the patterns). Values under
the event's own metadata keys (`PROTECTED_KEYS`: time, session, tool, outcome, ...) are written by the
server and keep their names' meaning; every string, including those, still goes through the patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from repo_sandbox.audit.known import KnownSecrets
from repo_sandbox.audit.masking import mask_text

EventDict = dict[str, Any]
"""One audit event: a JSON-able dict."""

Processor = Callable[[EventDict], EventDict]
"""A step of the audit chain (structlog style): takes the event, returns it (possibly changed)."""

REDACTED: Final = "[REDACTED]"
"""What replaces the value of a sensitive key."""

PROTECTED_KEYS: Final = frozenset(
    {"ts", "event", "session", "request_id", "tool", "outcome", "error_code", "error_category", "duration_ms"}
    | {"output_bytes", "sandbox", "redactions"}
)
"""Top-level event fields written by the server: exempt from key-based redaction (`session` is our own id)."""

_SENSITIVE_KEY: Final = re.compile(
    r"(?:^|_)(?:password|passwd|passphrase|pwd|secrets?|token|api_?key|access_?key|secret_?key|private_?key"
    r"|client_?secret|authorization|auth|cookies?|set_cookie|session|session_?id|sessionid|credentials?"
    r"|signature|tool_call_id|call_id)$"
)
"""A key is sensitive when its last words are one of these (`db_password`, `GITHUB_TOKEN`, `X-Api-Key`)."""

_PARTIAL_KEY: Final = re.compile(
    r"(?:^|_)(?:user|account|project|org|organization|customer|tenant|subscription|client|installation)_?id$"
)
"""Identifiers that are kept recognisable by their last 4 characters."""

_HOME: Final = re.compile(r"(?<![\w.~/-])(?:/home/[^/\s\"']+|/Users/[^/\s\"']+|/root)(?=/|\b|$)")
_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def normalise_key(key: str) -> str:
    """`X-Api-Key`, `apiKey`, `API_KEY` -> `x_api_key`, `api_key`, `api_key`."""
    return _CAMEL_BOUNDARY.sub("_", key).replace("-", "_").replace(".", "_").replace(" ", "_").lower()


def is_sensitive_key(key: str) -> bool:
    return _SENSITIVE_KEY.search(normalise_key(key)) is not None


def is_partial_key(key: str) -> bool:
    return _PARTIAL_KEY.search(normalise_key(key)) is not None


def partial_mask(value: object) -> object:
    """Keep the last 4 characters of an id (`****b7c1`); short ids are masked whole."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value)
    return "***" if len(text) <= 8 else "****" + text[-4:]


def _map_keyed(value: Any, on_key: Callable[[str, Any], tuple[bool, Any]]) -> Any:
    """Rebuild nested dicts/lists; `on_key(key, value)` returns (handled, replacement) for each dict item."""
    if isinstance(value, dict):
        result: dict[Any, Any] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            handled, replacement = on_key(str(key), item) if isinstance(key, str) else (False, None)
            result[key] = replacement if handled else _map_keyed(item, on_key)
        return result
    if isinstance(value, list | tuple):
        return [_map_keyed(item, on_key) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _map_strings(value: Any, on_string: Callable[[str], str]) -> Any:
    """Rebuild nested dicts/lists with every string (dict keys included) passed through `on_string`."""
    if isinstance(value, str):
        return on_string(value)
    if isinstance(value, dict):
        return {
            (on_string(k) if isinstance(k, str) else k): _map_strings(v, on_string)
            for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
        }
    if isinstance(value, list | tuple):
        return [_map_strings(item, on_string) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _for_unprotected(event: EventDict, transform: Callable[[Any], Any]) -> EventDict:
    return {key: value if key in PROTECTED_KEYS else transform(value) for key, value in event.items()}


def _strings_in(value: Any) -> list[str]:
    found: list[str] = []
    _map_strings(value, lambda text: found.append(text) or text)
    return found


class RedactSensitiveKeys:
    """Replace every value under a sensitive key, at any depth (booleans and nulls say nothing, so they stay).
    The replaced strings are remembered in `known`, so they are masked wherever else they appear."""

    __slots__ = ("known",)

    def __init__(self, known: KnownSecrets | None = None) -> None:
        self.known = known

    def __call__(self, event: EventDict) -> EventDict:
        replaced: list[str] = []

        def on_key(key: str, value: Any) -> tuple[bool, Any]:
            if is_sensitive_key(key) and value is not None and not isinstance(value, bool):
                replaced.extend(_strings_in(value))
                return True, REDACTED
            return False, None

        result = _for_unprotected(event, lambda value: _map_keyed({"": value}, on_key)[""])
        if self.known is not None:
            self.known.add(replaced)
        return result


def mask_partial_ids(event: EventDict) -> EventDict:
    """Keep only the last 4 characters of account-like ids (`user_id`, `project_id`, ...)."""

    def on_key(key: str, value: Any) -> tuple[bool, Any]:
        if is_partial_key(key) and not isinstance(value, dict | list):
            return True, partial_mask(value)
        return False, None

    return _for_unprotected(event, lambda value: _map_keyed({"": value}, on_key)[""])


class MaskSecretStrings:
    """Mask recognised secrets (tokens, keys, passwords in context, private keys) in every string, then the
    values in `known` (secrets seen before, e.g. in the call's own output) wherever they appear on their own."""

    __slots__ = ("known",)

    def __init__(self, known: KnownSecrets | None = None) -> None:
        self.known = known

    def __call__(self, event: EventDict) -> EventDict:
        found: set[str] = set()
        event = _map_strings(event, lambda text: mask_text(text, None, found))
        if self.known is None:
            return event
        self.known.add(found)
        return _map_strings(event, self.known.mask) if len(self.known) else event


def shorten_home_path(text: str) -> str:
    return _HOME.sub("~", text) if "/home/" in text or "/Users/" in text or "/root" in text else text


def shorten_home_paths(event: EventDict) -> EventDict:
    """`/home/alice/src/x` -> `~/src/x` (and `/Users/alice`, `/root`): who runs the server is not the log's business."""
    return _map_strings(event, shorten_home_path)


class CapValues:
    """Cut long strings and long lists, and stop at a nesting depth, so one event stays small."""

    __slots__ = ("max_chars", "max_depth", "max_items")

    def __init__(self, max_chars: int, *, max_items: int = 100, max_depth: int = 8) -> None:
        self.max_chars = max_chars
        self.max_items = max_items
        self.max_depth = max_depth

    def __call__(self, event: EventDict) -> EventDict:
        return self._cap(event, 0)

    def _cap(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            if len(value) <= self.max_chars:
                return value
            return f"{value[: self.max_chars]}...[{len(value) - self.max_chars} more chars]"
        if isinstance(value, dict | list | tuple) and depth >= self.max_depth:
            return "[too deep]"
        if isinstance(value, dict):
            items = list(value.items())  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
            capped = {str(k): self._cap(v, depth + 1) for k, v in items[: self.max_items]}
            if len(items) > self.max_items:
                capped["..."] = f"{len(items) - self.max_items} more keys"
            return capped
        if isinstance(value, list | tuple):
            seq: list[Any] = list(value)  # pyright: ignore[reportUnknownArgumentType]
            capped_list = [self._cap(v, depth + 1) for v in seq[: self.max_items]]
            if len(seq) > self.max_items:
                capped_list.append(f"...{len(seq) - self.max_items} more items")
            return capped_list
        return value
