"""The harmless redirections execute_bash accepts, as bash applies them, and the refusal of every other.

Accepted: `>/dev/null`, `>>/dev/null`, `N>/dev/null` and `N>>/dev/null` (N is 1 or 2), `&>/dev/null`,
`&>>/dev/null`, `>&/dev/null`, `N>&M` with N and M each 1 or 2, and `|&` (which bash applies as `2>&1` after
the command's own redirections). The target must be the literal word `/dev/null` (quoted or not, never a
glob): the server opens /dev/null itself and hands the program the descriptor, so no path from the command
line is ever opened. Everything else (`<`, `<>`, `>|`, `>&-`, descriptors other than 1 and 2, any other
file, here-documents) is refused with `details.construct = "redirection"`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, Literal

from repo_sandbox.errors import CommandNotAllowedError, SandboxError
from repo_sandbox.shell.words import decode_word

if TYPE_CHECKING:
    from collections.abc import Callable

    from tree_sitter import Node

Stream = Literal["out", "err", "null"]
"""Where a descriptor of a stage goes: its normal stdout (the pipe to the next stage, or the result's
stdout), the result's stderr, or /dev/null."""

DEV_NULL: Final = "/dev/null"
_TO_NULL: Final = frozenset({">", ">>"})
_BOTH_TO_NULL: Final = frozenset({"&>", "&>>"})


def _refused(text: str, why: str) -> CommandNotAllowedError:
    return CommandNotAllowedError(
        f"Redirection {text!r} is not allowed: {why}.",
        hint="Only >/dev/null, 2>/dev/null, &>/dev/null, 2>&1, 1>&2 and |& are accepted; stdout and stderr "
        "are returned separately and the repository is read-only.",
        construct="redirection",
        redirection=text,
    )


def apply_redirect(node: Node, source: bytes, fds: dict[int, Stream], check_word: Callable[[Node], None]) -> None:
    """Apply one `file_redirect` node to `fds` (descriptor -> stream), as bash would.

    `check_word` refuses a destination word that is not literal text (an expansion, a substitution).

    Raises:
        CommandNotAllowedError: any redirection outside the accepted set.
        CommandParseError: a destination word that bash would expand.
    """
    text = source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")
    descriptor = node.child_by_field_name("descriptor")
    operators = [c.type for c in node.children if not c.is_named]
    destinations = node.children_by_field_name("destination")
    if len(operators) != 1 or len(destinations) != 1:
        raise _refused(text, "write every redirection after the command's words, one target each")
    operator, destination = operators[0], destinations[0]
    glued = re.search(rb"[^ \t\n]*$", source[: node.start_byte])
    if descriptor is None and glued is not None and re.fullmatch(rb"[0-9]+|.*}", glued.group()):
        raise _refused(text, "only descriptors 1 (stdout) and 2 (stderr) can be redirected")  # `0>`, `{fd}>`
    fd = 1
    if descriptor is not None:
        number = source[descriptor.start_byte : descriptor.end_byte].decode()
        if number not in ("1", "2"):
            raise _refused(text, "only descriptors 1 (stdout) and 2 (stderr) can be redirected")
        fd = int(number)
    target = source[destination.start_byte : destination.end_byte].decode("utf-8", "surrogateescape")
    if operator == ">&" and destination.type == "number" and target in ("1", "2"):
        fds[fd] = fds[int(target)]
        return
    if operator not in (*_TO_NULL, *_BOTH_TO_NULL, ">&"):
        raise _refused(text, "only output to /dev/null and between stdout and stderr is possible")
    if (operator in _BOTH_TO_NULL or operator == ">&") and descriptor is not None:
        raise _refused(text, "a descriptor cannot be given here")
    _require_dev_null(destination, target, text, check_word)
    if operator in _TO_NULL:
        fds[fd] = "null"
    else:
        fds[1] = fds[2] = "null"


def _require_dev_null(destination: Node, target: str, text: str, check_word: Callable[[Node], None]) -> None:
    try:
        check_word(destination)
        word = decode_word(target)
    except SandboxError:
        raise _refused(text, "the target must be written as /dev/null") from None
    if word.has_glob or word.text != DEV_NULL:
        raise _refused(text, "the only file a command may write to is /dev/null")
