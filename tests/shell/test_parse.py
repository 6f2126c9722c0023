"""The command parser: what bash would make of the words, and every shell construct refused by name."""

from __future__ import annotations

import subprocess

import pytest

from repo_sandbox.errors import CommandNotAllowedError, CommandParseError, SandboxError
from repo_sandbox.shell.parse import ChangeDir, Pipeline, parse_command


def argv(command: str) -> list[list[str]]:
    (pipeline,) = parse_command(command).elements
    assert isinstance(pipeline, Pipeline)
    return [[stage.program, *(w.text for w in stage.args)] for stage in pipeline.stages]


ACCEPTED = [
    # plain words, pipelines, whitespace
    ("ls", [["ls"]]),
    ("ls -la", [["ls", "-la"]]),
    ("  ls   -la  ", [["ls", "-la"]]),
    ("ls\n", [["ls"]]),
    ("ls -la | wc -l", [["ls", "-la"], ["wc", "-l"]]),
    ("a | b | c", [["a"], ["b"], ["c"]]),
    # quoting as bash does it
    ("grep 'a b' f", [["grep", "a b", "f"]]),
    ('grep "a b" f', [["grep", "a b", "f"]]),
    ('echo "x\\"y"', [["echo", 'x"y']]),
    ('echo "a\\b"', [["echo", "a\\b"]]),
    ("echo 'a\\b'", [["echo", "a\\b"]]),
    ("echo a\\ b", [["echo", "a b"]]),
    ("echo $'a\\tb\\x41\\u00e9'", [["echo", "a\tbAé"]]),
    ('echo ""', [["echo", ""]]),
    ("echo ''", [["echo", ""]]),
    ("echo a''b", [["echo", "ab"]]),
    ("echo 'it'\\''s'", [["echo", "it's"]]),
    ('echo "$" \'$x\' "a$"', [["echo", "$", "$x", "a$"]]),
    ("echo HEAD@{1} {} a{b}c", [["echo", "HEAD@{1}", "{}", "a{b}c"]]),
    ("echo --f=~/x x:~", [["echo", "--f=~/x", "x:~"]]),
    ("echo a#b", [["echo", "a#b"]]),
    ("echo a\\\nb", [["echo", "ab"]]),
    ("ls \\\n -la", [["ls", "-la"]]),
    ("'ls' -l", [["ls", "-l"]]),
    ("awk '{print $1}' f", [["awk", "{print $1}", "f"]]),
    ("find . -name '*.py' \\( -a \\) \\;", [["find", ".", "-name", "*.py", "(", "-a", ")", ";"]]),
]


@pytest.mark.parametrize(("command", "expected"), ACCEPTED)
def test_accepted_commands_split_into_the_words_bash_would_pass(command: str, expected: list[list[str]]) -> None:
    assert argv(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "echo 'a b' \"c d\" e\\ f",
        "echo $'x\\ny' 'it'\\''s'",
        'echo "a\\$b" "a\\`b" "a\\\\b" "a\\qb"',
        "echo a\\\nb c\\#d",
    ],
)
def test_words_match_real_bash(command: str) -> None:
    script = command.replace("echo", "printf '%s\\0'", 1)
    real = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout
    assert argv(command)[0][1:] == real.decode().split("\0")[:-1]


def test_quoted_glob_characters_are_not_globs() -> None:
    (pipeline,) = parse_command("ls '*.py' \"src/\"*.py [ab] '[ab]' x\\*").pipelines
    (stage,) = pipeline.stages
    assert [w.has_glob for w in stage.args] == [False, True, True, False, False]


REFUSED = [
    # composition
    ("ls & id", CommandParseError, "background '&'"),
    ("ls &", CommandParseError, "background '&'"),
    ("ls\nid", CommandParseError, "newline-separated command list"),
    ("(ls)", CommandParseError, "subshell '( ... )'"),
    ("{ ls; }", CommandParseError, "command group '{ ...; }'"),
    ("! ls", CommandParseError, "'!' negation"),
    ("ls ; ; ls", CommandParseError, "syntax error"),
    ("; ls", CommandParseError, "syntax error"),
    ("ls &&", CommandParseError, "syntax error"),
    ("ls ||", CommandParseError, "syntax error"),
    ("ls ;;", CommandParseError, "';;'"),
    ("cd src | ls", CommandParseError, "'cd' in a pipeline"),
    ("ls | cd src", CommandParseError, "'cd' in a pipeline"),
    ("ls && (pwd && echo hi)", CommandParseError, "subshell '( ... )'"),
    ("ls && { ls; }", CommandParseError, "command group '{ ...; }'"),
    ("ls && ! ls", CommandParseError, "'!' negation"),
    ("true && if true; then ls; fi", CommandParseError, "'if' statement"),
    ("ls; ls &", CommandParseError, "background '&'"),
    ("[ a -a \\( b \\) ]", CommandParseError, "syntax error"),
    ("if true; then ls; fi", CommandParseError, "'if' statement"),
    ("for x in a; do ls; done", CommandParseError, "'for' loop"),
    ("while true; do ls; done", CommandParseError, "'while' loop"),
    ("case a in a) ls;; esac", CommandParseError, "'case' statement"),
    ("f() { ls; }", CommandParseError, "function definition"),
    ("[[ -f x ]]", CommandParseError, "test expression '[[ ]]'"),
    ("ls # note", CommandParseError, "comment"),
    ("# only a comment", CommandParseError, "comment"),
    ("ls 'open", CommandParseError, "syntax error"),
    ('ls "open', CommandParseError, "syntax error"),
    ("ls )", CommandParseError, "syntax error"),
    ("ls ?(a|b)", CommandParseError, "syntax error"),
    ("echo $'a\\0b'", CommandParseError, "NUL byte"),
    # expansions and substitutions
    ("echo $(id)", CommandNotAllowedError, "command substitution"),
    ("echo `id`", CommandNotAllowedError, "command substitution"),
    ('echo "$(id)"', CommandNotAllowedError, "command substitution"),
    ('echo "`id`"', CommandNotAllowedError, "command substitution"),
    ("echo $HOME", CommandNotAllowedError, "parameter expansion"),
    ("echo ${HOME}", CommandNotAllowedError, "parameter expansion"),
    ('echo "${HOME}"', CommandNotAllowedError, "parameter expansion"),
    ('echo "$1"', CommandNotAllowedError, "parameter expansion"),
    ("echo $?", CommandNotAllowedError, "parameter expansion"),
    ("echo $((1+2))", CommandNotAllowedError, "arithmetic expansion"),
    ("cat <(id)", CommandNotAllowedError, "process substitution"),
    ("cat >(id)", CommandNotAllowedError, "process substitution"),
    ("ls {a,b}", CommandNotAllowedError, "brace expansion"),
    ("ls {1..3}", CommandNotAllowedError, "brace expansion"),
    ("ls x{a,b}y", CommandNotAllowedError, "brace expansion"),
    ('echo $"x"', CommandNotAllowedError, "unquoted '$'"),
    ("echo a$", CommandNotAllowedError, "unquoted '$'"),
    ("ls ~", CommandNotAllowedError, "tilde expansion"),
    ("ls ~/x", CommandNotAllowedError, "tilde expansion"),
    ("ls ~root", CommandNotAllowedError, "tilde expansion"),
    ("ls a=~/x", CommandNotAllowedError, "tilde expansion"),
    # assignments and redirections
    ("A=b ls", CommandNotAllowedError, "variable assignment"),
    ("A=b", CommandNotAllowedError, "variable assignment"),
    ("export A=b", CommandNotAllowedError, "declaration (export/declare/local/readonly)"),
    ("ls > f", CommandNotAllowedError, "redirection"),
    ("ls >> f", CommandNotAllowedError, "redirection"),
    ("ls &> f", CommandNotAllowedError, "redirection"),
    ("cat < f", CommandNotAllowedError, "redirection"),
    ("cat < /dev/null", CommandNotAllowedError, "redirection"),
    ("ls 2>/tmp/x", CommandNotAllowedError, "redirection"),
    ("ls >/dev/null/../../tmp/x", CommandNotAllowedError, "redirection"),
    ("ls > /dev/nul?", CommandNotAllowedError, "redirection"),
    ("ls > /dev/*", CommandNotAllowedError, "redirection"),
    ("ls >/dev/zero", CommandNotAllowedError, "redirection"),
    ("echo x > f", CommandNotAllowedError, "redirection"),
    ("ls 2>&1 >/tmp/x", CommandNotAllowedError, "redirection"),
    ("ls >&/tmp/x", CommandNotAllowedError, "redirection"),
    ("ls &>>f", CommandNotAllowedError, "redirection"),
    ("ls 3>&1", CommandNotAllowedError, "redirection"),
    ("ls 1>&3", CommandNotAllowedError, "redirection"),
    ("ls 0>/dev/null", CommandNotAllowedError, "redirection"),
    ("ls 2>&-", CommandNotAllowedError, "redirection"),
    ("ls >| /dev/null", CommandNotAllowedError, "redirection"),
    ("ls <> /dev/null", CommandParseError, "syntax error"),
    ("ls {fd}>/dev/null", CommandNotAllowedError, "redirection"),
    ("ls 5>/dev/null", CommandNotAllowedError, "redirection"),
    ("ls 2<&1", CommandNotAllowedError, "redirection"),
    ("ls 2>&1x", CommandNotAllowedError, "redirection"),
    ("ls >$HOME", CommandNotAllowedError, "redirection"),
    ('ls >"$(id)"', CommandNotAllowedError, "redirection"),
    ("ls >/dev/null -la", CommandNotAllowedError, "redirection"),
    (">/dev/null ls", CommandNotAllowedError, "redirection"),
    ("ls && cat <<EOF\nx\nEOF", CommandNotAllowedError, "here-document"),
    ("cd src 2>/dev/null", CommandNotAllowedError, "redirection"),
    # cd
    ("cd", CommandNotAllowedError, "cd"),
    ("cd -", CommandNotAllowedError, "cd"),
    ("cd -P src", CommandNotAllowedError, "cd"),
    ("cd src lib", CommandNotAllowedError, "cd"),
    ("cd s*", CommandNotAllowedError, "cd"),
    ("cd ''", CommandNotAllowedError, "cd"),
    ("cd ~", CommandNotAllowedError, "tilde expansion"),
    ('cd "$HOME"', CommandNotAllowedError, "parameter expansion"),
    ("cat <<EOF\nx\nEOF", CommandNotAllowedError, "here-document"),
    ("cat <<< x", CommandNotAllowedError, "here-string"),
]


@pytest.mark.parametrize(("command", "error", "construct"), REFUSED)
def test_shell_constructs_are_refused_naming_the_construct(
    command: str, error: type[SandboxError], construct: str
) -> None:
    with pytest.raises(error) as info:
        parse_command(command)
    assert info.value.details["construct"] == construct


@pytest.mark.parametrize("command", ["/bin/ls", "./x.sh", "../bin/x", "l*", "'a b'", "-rf"])
def test_program_must_be_a_plain_name(command: str) -> None:
    with pytest.raises(CommandNotAllowedError):
        parse_command(command)


@pytest.mark.parametrize("command", ["", "   ", "\n"])
def test_empty_command_is_a_parse_error(command: str) -> None:
    with pytest.raises(CommandParseError):
        parse_command(command)


LISTS = [
    ("ls; id", ["ls", "id"], (";",)),
    ("ls;", ["ls"], ()),
    ("ls && id", ["ls", "id"], ("&&",)),
    ("ls || id", ["ls", "id"], ("||",)),
    ("a && b | c 2>/dev/null || true", ["a", "b | c 2>/dev/null", "true"], ("&&", "||")),
    ("cd src && ls -la | head -3", ["cd src", "ls -la | head -3"], ("&&",)),
    ("ls &&\n id", ["ls", "id"], ("&&",)),
]


@pytest.mark.parametrize(("command", "sources", "operators"), LISTS)
def test_lists_split_into_elements_and_operators(command: str, sources: list[str], operators: tuple[str, ...]) -> None:
    parsed = parse_command(command)
    assert [element.source for element in parsed.elements] == sources
    assert parsed.operators == operators


@pytest.mark.parametrize(
    ("command", "index"), [("ls; echo x > f", 1), ("cd src && ls 3>&1; ls", 1), ("cd ~ && ls", 0), ("ls || cd -", 1)]
)
def test_a_refusal_in_a_list_names_its_element(command: str, index: int) -> None:
    with pytest.raises(SandboxError) as info:
        parse_command(command)
    assert info.value.details["element_index"] == index


def test_cd_is_an_element_of_its_own() -> None:
    first, second = parse_command("cd 'a b' && ls").elements
    assert first == ChangeDir("a b", "cd 'a b'")
    assert isinstance(second, Pipeline)


STREAMS = [
    ("ls", [("out", "err")]),
    ("ls >/dev/null", [("null", "err")]),
    ("ls 1>>/dev/null", [("null", "err")]),
    ("ls 2>/dev/null", [("out", "null")]),
    ("ls &>/dev/null", [("null", "null")]),
    ("ls &>>'/dev/null'", [("null", "null")]),
    ("ls >&/dev/null", [("null", "null")]),
    ("ls 2>&1", [("out", "out")]),
    ("ls 1>&2", [("err", "err")]),
    ("ls >&2", [("err", "err")]),
    ("ls >/dev/null 2>&1", [("null", "null")]),
    ("ls 2>&1 >/dev/null", [("null", "out")]),
    ("ls |& cat", [("out", "out"), ("out", "err")]),
    ("ls 2>/dev/null |& cat", [("out", "out"), ("out", "err")]),
    ("ls >/dev/null |& cat", [("null", "null"), ("out", "err")]),
    ("ls 1>&2 | cat 2>/dev/null", [("err", "err"), ("out", "null")]),
]


@pytest.mark.parametrize(("command", "streams"), STREAMS)
def test_redirections_give_each_stage_its_streams_as_bash_applies_them(
    command: str, streams: list[tuple[str, str]]
) -> None:
    (pipeline,) = parse_command(command).pipelines
    assert [(stage.stdout, stage.stderr) for stage in pipeline.stages] == streams


def test_limits_on_length_and_stages() -> None:
    with pytest.raises(CommandParseError, match="limit"):
        parse_command("echo " + "a" * 100, max_chars=50)
    with pytest.raises(CommandParseError, match="stages"):
        parse_command(" | ".join(["cat"] * 5), max_stages=4)
    with pytest.raises(CommandParseError, match="elements"):
        parse_command(" ; ".join(["ls"] * 17))
