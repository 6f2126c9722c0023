"""One JSON-RPC message per stdio line or WebSocket text frame, and the answer to one that is not a message.

The SDK drops what it cannot parse (a debug log line), so a client that sent a malformed request would wait
for ever. JSON-RPC 2.0 answers it instead: invalid JSON gets -32700 "Parse error", anything else that is not a
message -32600 "Invalid Request" (a request whose id is neither a string nor a number too: the SDK would take
it for a notification), with the request's id when one can be read, else null. A malformed *response*
(an object with `result` or `error` and no `method`) gets no answer, so that two peers cannot answer each
other's errors for ever, and neither does a blank line. The answer never quotes the input or the validator's
report.

A leading byte-order mark is ignored (RFC 8259 allows a parser to). A message nested deeper than `MAX_DEPTH`
(the SDK's parser reads no deeper) is answered -32600 "nested too deeply", with its id when the top level
has one: it is JSON, just not a message this server reads; unbalanced brackets at that depth are still a
parse error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types

PARSE_ERROR_MESSAGE: Final = "Parse error: not valid JSON."
INVALID_REQUEST_MESSAGE: Final = "Invalid Request: not a JSON-RPC 2.0 message."
MAX_DEPTH: Final = 200
"""Deepest nesting of arrays and objects a message may have (pydantic-core's JSON parser stops at 200)."""
TOO_DEEP_MESSAGE: Final = f"Invalid Request: nested deeper than {MAX_DEPTH} levels."
BOM: Final = "\ufeff"
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]|(?<![\d.eE+-])-?\d+(?![.eE\d])')
_CLOSERS: Final = {"]": "[", "}": "{"}


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A line or frame that is not a JSON-RPC message; `reply` is what to answer (None: nothing)."""

    reply: types.JSONRPCError | None


def too_large(max_bytes: int) -> BadFrame:
    """The answer to a line longer than `max_bytes` (dropped as it arrived, never held whole)."""
    message = f"Invalid Request: a message longer than {max_bytes} bytes ([server] max_body_bytes)."
    return BadFrame(_error(None, types.INVALID_REQUEST, message))


def read_message(text: str) -> types.JSONRPCMessage | BadFrame:
    """The message in `text`, or what to answer when it holds none."""
    text = text.removeprefix(BOM)
    if not text.strip():
        return BadFrame(None)  # a blank line between messages: nothing was asked
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        if (too_deep := deep_message_error(text)) is not None:
            return BadFrame(too_deep)
    else:
        # A real notification has no id at all.
        if not isinstance(message, types.JSONRPCNotification) or "id" not in json.loads(text):
            return message
    try:
        document: Any = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter's stack
        return BadFrame(_error(None, types.PARSE_ERROR, PARSE_ERROR_MESSAGE))
    if isinstance(document, dict) and "method" not in document and ("result" in document or "error" in document):
        return BadFrame(None)
    request_id = document.get("id") if isinstance(document, dict) else None  # pyright: ignore[reportUnknownMemberType]
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return BadFrame(_error(request_id, types.INVALID_REQUEST, INVALID_REQUEST_MESSAGE))


def deep_message_error(text: str) -> types.JSONRPCError | None:
    """The answer to a text nested deeper than `MAX_DEPTH`; None for any other text. Scanned without
    recursion (a parser's recursion is what such a text exhausts): -32600 with the top-level id when the
    brackets balance, else -32700."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    stack: list[str] = []
    deepest = 0
    request_id: int | str | None = None
    previous: tuple[str, str] = ("", "")
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            stack.append(token)
            deepest = max(deepest, len(stack))
        elif token in _CLOSERS:
            if not stack or stack.pop() != _CLOSERS[token]:
                return _error(None, types.PARSE_ERROR, PARSE_ERROR_MESSAGE)
        elif previous == ('"id"', ":") and stack == ["{"] and request_id is None:
            request_id = json.loads(token)
        previous = (previous[1], token)
    if deepest <= MAX_DEPTH:
        return None
    if stack:
        return _error(None, types.PARSE_ERROR, PARSE_ERROR_MESSAGE)
    return _error(request_id, types.INVALID_REQUEST, TOO_DEEP_MESSAGE)


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
