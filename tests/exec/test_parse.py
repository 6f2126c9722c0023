"""The command parser: what bash would make of the words, and every shell construct refused by name."""

from __future__ import annotations

import subprocess

import pytest

from repo_sandbox.errors import CommandNotAllowedError, CommandParseError, SandboxError
from repo_sandbox.exec.parse import parse_command


def argv(command: str) -> list[list[str]]:
    return [[stage.program, *(w.text for w in stage.args)] for stage in parse_command(command).stages]


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
    (stage,) = parse_command("ls '*.py' \"src/\"*.py [ab] '[ab]' x\\*").stages
    assert [w.has_glob for w in stage.args] == [False, True, True, False, False]


REFUSED = [
    # composition
    ("ls; id", CommandParseError, "';' command list"),
    ("ls ;", CommandParseError, "';' command list"),
    ("ls && id", CommandParseError, "'&&' / '||' command list"),
    ("ls || id", CommandParseError, "'&&' / '||' command list"),
    ("ls & id", CommandParseError, "background '&'"),
    ("ls &", CommandParseError, "background '&'"),
    ("ls\nid", CommandParseError, "newline-separated command list"),
    ("(ls)", CommandParseError, "subshell '( ... )'"),
    ("{ ls; }", CommandParseError, "command group '{ ...; }'"),
    ("! ls", CommandParseError, "'!' negation"),
    ("ls |& cat", CommandParseError, "'|&' (pipe with stderr)"),
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
    ("ls 2>&1", CommandNotAllowedError, "redirection"),
    ("ls &> f", CommandNotAllowedError, "redirection"),
    ("cat < f", CommandNotAllowedError, "redirection"),
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


def test_limits_on_length_and_stages() -> None:
    with pytest.raises(CommandParseError, match="limit"):
        parse_command("echo " + "a" * 100, max_chars=50)
    with pytest.raises(CommandParseError, match="stages"):
        parse_command(" | ".join(["cat"] * 5), max_stages=4)
