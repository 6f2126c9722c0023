"""Parse an execute_bash command line with a real bash grammar and accept only what we can run shell-free.

Accepted: a list of pipelines joined by `&&`, `||` and `;` (a trailing `;` too), each a simple command or a
`|` / `|&` pipeline of simple commands, whose words are plain, quoted ('...', "...", $'...') or escaped text,
possibly with unquoted glob characters; the harmless redirections of `shell.redirects`; and `cd DIR` as an
element of its own. Everything else is refused with a graded error naming the construct:
- composition (`&`, newlines, `( )`, `{ }`, `!`, control flow, functions, comments)
  -> `command_parse_error`;
- what a shell would expand or redirect (`$VAR`, `${}`, `$()`, backticks, `$(( ))`, `<( )`, `~`, `{a,b}`,
  `A=b cmd`, `>` to a file, `<`, here-documents) -> `command_not_allowed`.

tree-sitter-bash decides the structure (an allow-list of node types). Its tree nests redirections loosely
(`a && b | c 2>/dev/null` comes out as a redirected list), so the tree is flattened into its tokens in source
order and a redirection belongs to the simple command it follows, as in bash. The words of each accepted
command are then split and unquoted by `shell.words`, which refuses expansions a second time. Nothing here
ever reaches a shell: the argv built from this parse is exactly what runs.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Final

from repo_sandbox.errors import CommandNotAllowedError, CommandParseError, SandboxError
from repo_sandbox.shell.redirects import Stream, apply_redirect
from repo_sandbox.shell.words import Word, decode_word, split_words

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

PROGRAM_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*|\[")
"""A program is named, never given as a path (`[` is test's other name)."""

MAX_ELEMENTS: Final = 16
"""Most elements (pipelines and cds) in one command list."""

_OPERATORS: Final = frozenset({"&&", "||", ";", "|", "|&"})
_COMMANDS: Final = frozenset({"command", "test_command"})
"""A simple command, and `[ ... ]` (which tree-sitter parses as a test expression, like `[[ ... ]]`)."""
_CONTAINERS: Final = frozenset({"list", "pipeline", "redirected_statement"})
_ARGUMENT_NODES: Final = frozenset({"word", "string", "raw_string", "ansi_c_string", "number", "concatenation"})
_STRING_PARTS: Final = frozenset({"string_content"})
_COMPOSITION: Final = {
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
    ";;": "';;'",
    "&": "background '&'",
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
    "redirection": "Only >/dev/null, 2>/dev/null, &>/dev/null, 2>&1, 1>&2 and |& are accepted; drop the redirection.",
    "here-document": "Pass the text as an argument or put it in a file of the repository.",
    "here-string": "Pass the text as an argument instead.",
    "variable assignment": "The environment is fixed by the server; drop the assignment.",
    "parameter expansion": "Write the value itself instead of a variable.",
}


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One stage: the program name and its words (quote-removed, not yet glob-expanded), and where its
    stdout and stderr go once its redirections are applied (`shell.redirects`)."""

    program: str
    args: tuple[Word, ...]
    stdout: Stream = "out"
    stderr: Stream = "err"


@dataclass(frozen=True, slots=True)
class Pipeline:
    """One or more stages joined by `|` (or `|&`); `source` is its text in the command line."""

    stages: tuple[SimpleCommand, ...]
    source: str


@dataclass(frozen=True, slots=True)
class ChangeDir:
    """`cd DIR` as an element of a list: the directory of the elements that follow."""

    target: str
    source: str


Element = Pipeline | ChangeDir


@dataclass(frozen=True, slots=True)
class CommandList:
    """A parsed command line: elements joined by `&&`, `||` or `;` (`operators[i]` stands before
    `elements[i + 1]`); a single pipeline is a list of one."""

    elements: tuple[Element, ...]
    operators: tuple[str, ...]
    source: str

    @property
    def pipelines(self) -> tuple[Pipeline, ...]:
        return tuple(e for e in self.elements if isinstance(e, Pipeline))


@cache
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _composition_error(construct: str) -> CommandParseError:
    return CommandParseError(
        f"Shell syntax {construct} is not supported: execute_bash runs '|' pipelines joined by &&, || and ;.",
        hint="Write the commands as a list (a && b, a || b, a; b), or run them in separate calls.",
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


def _tokens(node: Node, out: list[Node]) -> None:
    """The commands, list and pipe operators and redirections under `node`, in source order."""
    for child in node.children:
        kind = child.type
        if kind in _COMMANDS or kind in _OPERATORS or (kind == "file_redirect" and node.type == "redirected_statement"):
            out.append(child)
        elif kind in _CONTAINERS:
            _tokens(child, out)
        else:
            raise _refuse_node(child)


class _ListBuilder:
    """Turns the flat tokens into list elements: `|`/`|&` join stages, `&&`/`||`/`;` join elements."""

    def __init__(self, source: bytes, max_stages: int) -> None:
        self.source = source
        self.max_stages = max_stages
        self.elements: list[Element] = []
        self.operators: list[str] = []
        self.stages: list[SimpleCommand] = []
        self.command: Node | None = None
        self.fds: dict[int, Stream] = {}
        self.span = (0, 0)

    def feed(self, token: Node) -> None:
        kind = token.type
        if kind in _COMMANDS:
            if self.command is not None:
                raise _composition_error("newline-separated command list")
            self.command, self.fds = token, {1: "out", 2: "err"}
            if not self.stages:
                self.span = (token.start_byte, token.end_byte)
        elif self.command is None:
            raise _composition_error(f"'{kind}'") if kind in _OPERATORS else _expansion_error("redirection")
        elif kind == "file_redirect":
            apply_redirect(token, self.source, self.fds, _check_argument)
        else:
            self._end_stage(pipe_stderr=kind == "|&")
            if kind not in ("|", "|&"):
                self._end_element()
                self.operators.append(kind)
            return
        self.span = (self.span[0], token.end_byte)

    def _end_stage(self, *, pipe_stderr: bool) -> None:
        assert self.command is not None
        command = _simple_command(self.command, self.source)
        if pipe_stderr:
            self.fds[2] = self.fds[1]  # bash: `|&` is `2>&1 |`, after the command's own redirections
        self.stages.append(SimpleCommand(command.program, command.args, self.fds[1], self.fds[2]))
        self.command = None
        if len(self.stages) > self.max_stages:
            raise CommandParseError(
                f"A pipeline has more than {self.max_stages} stages; the limit is {self.max_stages}.",
                max_stages=self.max_stages,
            )

    def _end_element(self) -> None:
        text = self.source[self.span[0] : self.span[1]].decode("utf-8", "surrogateescape")
        stages, self.stages = self.stages, []
        if not any(stage.program == "cd" for stage in stages):
            self.elements.append(Pipeline(tuple(stages), text))
        elif len(stages) > 1:
            raise _composition_error("'cd' in a pipeline")
        else:
            self.elements.append(ChangeDir(_cd_target(stages[0]), text))
        if len(self.elements) > MAX_ELEMENTS:
            raise CommandParseError(
                f"The command list has more than {MAX_ELEMENTS} elements; the limit is {MAX_ELEMENTS}.",
                max_elements=MAX_ELEMENTS,
            )

    def finish(self) -> tuple[tuple[Element, ...], tuple[str, ...]]:
        if self.command is not None:
            self._end_stage(pipe_stderr=False)
            self._end_element()
        elif self.operators and self.operators[-1] == ";" and not self.stages:
            self.operators.pop()  # `ls;` is `ls`
        else:
            raise _composition_error("a trailing operator")
        return tuple(self.elements), tuple(self.operators)


def _cd_target(stage: SimpleCommand) -> str:
    """The directory of `cd DIR`: one literal word, no option, no `-`, no glob; never a redirection."""
    if (stage.stdout, stage.stderr) != ("out", "err"):
        raise CommandNotAllowedError(
            "'cd' takes no redirection.", hint="Drop the redirection of cd.", construct="redirection", program="cd"
        )
    words = stage.args
    problem = ""
    if len(words) != 1:
        problem = "give exactly one directory (plain 'cd' would go to a home directory outside the repository)"
    elif words[0].has_glob:
        problem = "a glob is not expanded for cd; write the directory out"
    elif not words[0].text or words[0].text.startswith("-"):
        problem = "options, 'cd -' and an empty directory are not supported"
    if problem:
        raise CommandNotAllowedError(
            f"'{' '.join(['cd', *(w.text for w in words)])}' is not supported: {problem}.",
            hint="Use 'cd DIR && ...' with DIR relative to the current directory, or pass cwd.",
            construct="cd",
            program="cd",
        )
    return words[0].text


def _simple_command(node: Node, source: bytes) -> SimpleCommand:
    children = node.children
    if node.type == "test_command":
        if not children or children[0].type != "[":
            raise _refuse_node(node)  # `[[ ... ]]`; `[ ... ]` is the program `[`, its words decoded below
    elif not children or children[0].type != "command_name":
        raise _refuse_node(children[0] if children else node)
    else:
        for child in children[1:]:
            _check_argument(child)
        for part in children[0].children:
            _check_argument(part)
    text = source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")
    words = [decode_word(raw) for raw in split_words(text)]
    program = words[0]
    if program.has_glob or not PROGRAM_NAME.fullmatch(program.text):
        raise CommandNotAllowedError(
            f"'{program.text}' is not a program name: give the name of an allowed program, not a path.",
            hint="Read repo-sandbox://policy for the allowed programs.",
            program=program.text,
        )
    return SimpleCommand(program.text, tuple(words[1:]))


def parse_command(text: str, *, max_stages: int = 8, max_chars: int = 8192) -> CommandList:
    """Parse `text` into a list of pipelines and `cd`s (results are immutable and cached by text).

    Raises:
        CommandParseError: empty, too long, invalid syntax, or shell composition.
        CommandNotAllowedError: an expansion, substitution, assignment or redirection.
    """
    return _parse_cached(text, max_stages, max_chars)


_parse_lock = threading.Lock()
"""One parser serves every worker thread; a tree-sitter parser must not parse two texts at once."""


@lru_cache(maxsize=512)
def _parse_cached(text: str, max_stages: int, max_chars: int) -> CommandList:
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
    tokens: list[Node] = []
    _tokens(root, tokens)
    if not tokens:
        raise _composition_error("comment")
    builder = _ListBuilder(source, max_stages)
    is_list = any(token.type in ("&&", "||", ";") for token in tokens)
    try:
        for token in tokens:
            builder.feed(token)
        elements, operators = builder.finish()
    except SandboxError as refusal:
        if is_list:  # name the element of the list, as the policy's refusals do
            refusal.details.setdefault("element_index", len(builder.elements))
        raise
    return CommandList(elements, operators, text)
