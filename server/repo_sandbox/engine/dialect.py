"""The one regex dialect search_text accepts: Rust-regex (ripgrep) syntax.

Python's `regex` module accepts more (backreferences, look-around, atomic groups, possessive quantifiers,
recursion). Patterns using those are refused with `invalid_regex`, so both engines answer the same
question and no pattern depends on backtracking features.
"""

from __future__ import annotations

import re
from typing import Final

from repo_sandbox.errors import InvalidRegexError

MAX_PATTERN_CHARS: Final = 10_000

_GROUP_FLAGS = re.compile(r"[imsUxR-]+[:)]")
_NAMED_GROUP = re.compile(r"P?<[A-Za-z_][A-Za-z0-9_]*>")


def _refuse(pattern: str, construct: str, position: int) -> InvalidRegexError:
    return InvalidRegexError(
        f"The pattern uses {construct}, which the supported regex dialect (Rust/ripgrep syntax) does not have.",
        pattern=pattern[:200],
        construct=construct,
        position=position,
    )


def check_dialect(pattern: str) -> None:
    """Refuse constructs outside Rust-regex syntax.

    Raises:
        InvalidRegexError: naming the construct and its position.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidRegexError(f"The pattern is longer than {MAX_PATTERN_CHARS} characters.", pattern=pattern[:200])
    i = 0
    in_class = False
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1] if i + 1 < n else ""
            if not in_class and nxt.isdigit():
                raise _refuse(pattern, "a backreference or octal escape (\\" + nxt + ")", i)
            if nxt in ("g", "k") and not in_class:
                raise _refuse(pattern, "a named backreference (\\" + nxt + ")", i)
            if nxt == "G":
                raise _refuse(pattern, "a \\G anchor", i)
            i += 2
            continue
        if in_class:
            if ch == "[" and pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                i = end + 2 if end != -1 else i + 1
                continue
            if ch == "]":
                in_class = False
            i += 1
            continue
        if ch == "[":
            in_class = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1  # a leading ']' is literal
            continue
        if ch == "(" and pattern.startswith("(?", i):
            rest = pattern[i + 2 :]
            if rest.startswith(("=", "!", "<=", "<!")):
                raise _refuse(pattern, "look-around", i)
            if not (rest.startswith(":") or _GROUP_FLAGS.match(rest) or _NAMED_GROUP.match(rest)):
                raise _refuse(pattern, f"the group syntax '(?{rest[:2]}'", i)
        if ch in "*+?}" and i + 1 < n and pattern[i + 1] == "+":
            raise _refuse(pattern, "a possessive quantifier", i)
        i += 1
