"""Parse an execute_bash command line with a real bash grammar and accept only what we can run shell-free.

Accepted: one simple command, or a `|` pipeline of simple commands, whose words are plain, quoted
('...', "...", $'...') or escaped text, possibly with unquoted glob characters. Everything else is refused
with a graded error naming the construct:
- composition (`;`, `&&`, `||`, `&`, newlines, `( )`, `{ }`, `!`, `|&`, control flow, functions, comments)
  -> `command_parse_error` (run each command in its own call);
- what a shell would expand or redirect (`$VAR`, `${}`, `$()`, backticks, `$(( ))`, `<( )`, `~`, `{a,b}`,
  `A=b cmd`, `>`, `<`, here-documents) -> `command_not_allowed`.

tree-sitter-bash decides the structure (an allow-list of node types); the words of each accepted command
are then split and unquoted by `exec._words`, which refuses expansions a second time. Nothing here ever
reaches a shell: the argv built from this parse is exactly what runs.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Final

from repo_sandbox.errors import CommandNotAllowedError, CommandParseError, SandboxError
from repo_sandbox.exec._words import Word, decode_word

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

PROGRAM_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
"""A program is named, never given as a path."""

_ARGUMENT_NODES: Final = frozenset({"word", "string", "raw_string", "ansi_c_string", "number", "concatenation"})
_STRING_PARTS: Final = frozenset({"string_content"})
_COMPOSITION: Final = {
    "list": "'&&' / '||' command list",
    "subshell": "subshell '( ... )'",
    "compound_statement": "command group '{ ...; }'",
    "negated_command": "'!' negation",
    "function_definition": "function definition",
    "if_statement": "'if' statement",
    "for_statement": "'for' loop",
    "c_style_for_statement": "'for' loop",
    "while_statement": "'while' loop",
    "case_statement": "'case' statement",
    "test_command": "test expression '[[ ]]'",
    "comment": "comment",
    ";": "';' command list",
    ";;": "';;'",
    "&": "background '&'",
    "|&": "'|&' (pipe with stderr)",
}
_EXPANSIONS: Final = {
    "command_substitution": "command substitution",
    "process_substitution": "process substitution",
    "arithmetic_expansion": "arithmetic expansion",
    "expansion": "parameter expansion",
    "simple_expansion": "parameter expansion",
    "brace_expression": "brace expansion",
    "translated_string": "locale string",
    "variable_assignment": "variable assignment",
    "variable_assignments": "variable assignment",
    "declaration_command": "declaration (export/declare/local/readonly)",
    "unset_command": "'unset'",
    "redirected_statement": "redirection",
    "file_redirect": "redirection",
    "heredoc_redirect": "here-document",
    "herestring_redirect": "here-string",
}
_HINTS: Final = {
    "redirection": "stdout and stderr are returned separately and the repository is read-only; drop the redirection.",
    "here-document": "Pass the text as an argument or put it in a file of the repository.",
    "here-string": "Pass the text as an argument instead.",
    "variable assignment": "The environment is fixed by the server; drop the assignment.",
    "parameter expansion": "Write the value itself instead of a variable.",
}


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One stage: the program name and its words (quote-removed, not yet glob-expanded)."""

    program: str
    args: tuple[Word, ...]


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A parsed command line: one or more stages joined by `|`."""

    stages: tuple[SimpleCommand, ...]
    source: str


@cache
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _composition_error(construct: str) -> CommandParseError:
    return CommandParseError(
        f"Shell syntax {construct} is not supported: execute_bash runs one command or a '|' pipeline.",
        hint="Run each command in its own execute_bash call, and combine the results yourself.",
        construct=construct,
    )


def _expansion_error(construct: str) -> CommandNotAllowedError:
    return CommandNotAllowedError(
        f"Shell feature not allowed: {construct}. Commands run without a shell.",
        hint=_HINTS.get(construct, "Write every argument out literally (quoted if needed)."),
        construct=construct,
    )


def _refuse_node(node: Node) -> SandboxError:
    kind = node.type
    if kind == "redirected_statement":
        inner = [c.type for c in node.children if c.type in ("heredoc_redirect", "herestring_redirect")]
        kind = inner[0] if inner else kind
    if kind in _EXPANSIONS:
        return _expansion_error(_EXPANSIONS[kind])
    if kind in _COMPOSITION:
        return _composition_error(_COMPOSITION[kind])
    if not node.is_named:
        return _expansion_error(f"unquoted {kind!r}")
    return _composition_error(f"construct '{kind}'")


def _check_argument(node: Node) -> None:
    """Only literal word material may appear inside an argument, at any depth."""
    if node.type not in _ARGUMENT_NODES and node.type not in _STRING_PARTS:
        raise _refuse_node(node)
    for child in node.children:
        if child.type in _EXPANSIONS:
            raise _refuse_node(child)
        if child.is_named:
            _check_argument(child)
        elif node.type == "concatenation":
            raise _refuse_node(child)


def _statements(root: Node) -> list[Node]:
    statements: list[Node] = []
    for child in root.children:
        if child.type in _COMPOSITION:
            raise _refuse_node(child)
        if not child.is_named:
            raise _composition_error(f"'{child.type}'")
        statements.append(child)
    if len(statements) > 1:
        raise _composition_error("newline-separated command list")
    return statements


def _stage_nodes(statement: Node) -> list[Node]:
    if statement.type == "command":
        return [statement]
    if statement.type != "pipeline":
        raise _refuse_node(statement)
    stages: list[Node] = []
    for child in statement.children:
        if child.type == "|":
            continue
        if child.type != "command":
            raise _refuse_node(child)
        stages.append(child)
    return stages


def split_words(text: str) -> list[str]:
    """Split a simple command's source into words at unquoted blanks (quotes, escapes, line continuations)."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in " \t\n":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            i += 1
            continue
        if char == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                continue
            current.append(text[i : i + 2])
            in_word, i = True, i + 2
            continue
        in_word = True
        if char in "'\"" or (char == "$" and i + 1 < n and text[i + 1] == "'"):
            start = i
            i += 2 if char == "$" else 1
            quote = "'" if char == "$" else char
            while i < n and text[i] != quote:
                i += 2 if (quote != "'" or char == "$") and text[i] == "\\" else 1
            current.append(text[start : i + 1])
            i += 1
            continue
        current.append(char)
        i += 1
    if in_word:
        words.append("".join(current))
    return words


def _simple_command(node: Node, source: bytes) -> SimpleCommand:
    children = node.children
    if not children or children[0].type != "command_name":
        raise _refuse_node(children[0] if children else node)
    for child in children[1:]:
        _check_argument(child)
    for part in children[0].children:
        _check_argument(part)
    text = source[node.start_byte : node.end_byte].decode("utf-8")
    words = [decode_word(raw) for raw in split_words(text)]
    program = words[0]
    if program.has_glob or not PROGRAM_NAME.fullmatch(program.text):
        raise CommandNotAllowedError(
            f"'{program.text}' is not a program name: give the name of an allowed program, not a path.",
            hint="Read repo-sandbox://policy for the allowed programs.",
            program=program.text,
        )
    return SimpleCommand(program.text, tuple(words[1:]))


def parse_command(text: str, *, max_stages: int = 8, max_chars: int = 8192) -> Pipeline:
    """Parse `text` into a pipeline of simple commands (results are immutable and cached by text).

    Raises:
        CommandParseError: empty, too long, invalid syntax, or shell composition.
        CommandNotAllowedError: an expansion, substitution, assignment or redirection.
    """
    return _parse_cached(text, max_stages, max_chars)


_parse_lock = threading.Lock()
"""One parser serves every worker thread; a tree-sitter parser must not parse two texts at once."""


@lru_cache(maxsize=512)
def _parse_cached(text: str, max_stages: int, max_chars: int) -> Pipeline:
    if len(text) > max_chars:
        raise CommandParseError(
            f"The command is {len(text)} characters long; the limit is {max_chars}.", max_chars=max_chars
        )
    if "\x00" in text:
        raise CommandParseError("The command contains a NUL byte.", construct="NUL byte")
    if not text.strip():
        raise CommandParseError("The command is empty.", hint="Pass a command such as 'git status'.")
    source = text.encode("utf-8", "surrogateescape")
    with _parse_lock:
        root = _parser().parse(source).root_node
    if root.has_error:
        raise CommandParseError(
            "The command is not valid shell syntax (an unterminated quote, a stray operator or bracket?).",
            hint="Check the quoting; use single quotes for text containing special characters.",
            construct="syntax error",
        )
    statements = _statements(root)
    if not statements:
        raise _composition_error("comment")
    stages = [_simple_command(node, source) for node in _stage_nodes(statements[0])]
    if len(stages) > max_stages:
        raise CommandParseError(
            f"The pipeline has {len(stages)} stages; the limit is {max_stages}.", max_stages=max_stages
        )
    return Pipeline(tuple(stages), text)
