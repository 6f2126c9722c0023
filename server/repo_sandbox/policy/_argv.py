"""getopt-style parsing of an argv against an exact-name option allow-list.

Mirrors GNU `getopt_long` closely enough that what we classify as an option, a value or an operand is what
the real program will: bundled short options (`-uoFILE` is `-u -o FILE`), attached or separate values,
`--name=value`, `--` ending the options, and options after operands (GNU permutes). Long options must be
written out exactly: GNU programs accept any unambiguous abbreviation (`sort --outp=F` is `--output=F`), so
only exact names can be allow-listed; an abbreviation is refused with the full name in the hint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from repo_sandbox.policy.decision import Verdict, deny_argument


class Refused(Exception):
    """A stage is refused; carries the verdict that names the rule."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


@dataclass(frozen=True, slots=True)
class OptionTable:
    """The options a program accepts, by exact name ('-n', '--lines')."""

    flags: frozenset[str] = frozenset()
    """Options without a value."""
    values: frozenset[str] = frozenset()
    """Options that need a value (attached, `=value`, or the next word)."""
    optional: frozenset[str] = frozenset()
    """Options whose value is optional and only ever attached (`--color`, `--color=never`, `-M50%`)."""
    pairs: frozenset[str] = frozenset()
    """Long options followed by two values (`jq --arg NAME VALUE`)."""
    denied: Mapping[str, str] = field(default_factory=dict[str, str])
    """Options refused with an explanation (anything unlisted is refused too, with a generic one)."""
    numeric: bool = False
    """`-20` is an option (head, tail, grep context)."""

    def long_names(self) -> list[str]:
        return sorted(
            o for o in (*self.flags, *self.values, *self.optional, *self.pairs, *self.denied) if o.startswith("--")
        )


@dataclass(slots=True)
class ParsedArgs:
    """Options in order (exact name, value or None) and operands in order."""

    options: list[tuple[str, str | None]] = field(default_factory=list[tuple[str, str | None]])
    operands: list[str] = field(default_factory=list[str])
    saw_double_dash: bool = False
    after_double_dash: list[str] = field(default_factory=list[str])
    """The operands that came after `--` (a suffix of `operands`)."""
    words: list[int] = field(default_factory=list[int])
    """For each entry of `options`, the index of the argument word it was read from (its name's word)."""

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values_of(self, *names: str) -> list[str]:
        return [value for name, value in self.options if name in names and value is not None]


def refuse(program: str, option: str, reason: str, *, rule: str | None = None) -> Refused:
    return Refused(deny_argument(program, option, reason, rule=rule))


def _unknown(program: str, table: OptionTable, option: str) -> Refused:
    if option in table.denied:
        return refuse(program, option, f"{program} {option} is not allowed: {table.denied[option]}.")
    return refuse(
        program,
        option,
        f"{program} option {option} is not in the allowlist.",
        rule=f"{program}: options allowlist",
    )


def _long(program: str, table: OptionTable, word: str, rest: Sequence[str], i: int, out: ParsedArgs) -> int:
    name, eq, value = word.partition("=")
    if name in table.denied:
        raise _unknown(program, table, name)
    if name in table.flags:
        if eq:
            raise refuse(program, name, f"{program} option {name} takes no value.")
        out.options.append((name, None))
        return i + 1
    if name in table.values:
        if eq:
            out.options.append((name, value))
            return i + 1
        if i + 1 >= len(rest):
            raise refuse(program, name, f"{program} option {name} needs a value.")
        out.options.append((name, rest[i + 1]))
        return i + 2
    if name in table.optional:
        out.options.append((name, value if eq else None))
        return i + 1
    if name in table.pairs and not eq:
        if i + 2 >= len(rest):
            raise refuse(program, name, f"{program} option {name} needs two values.")
        out.options.append((name, rest[i + 1]))
        out.options.append((name, rest[i + 2]))
        return i + 3
    expansions = [o for o in table.long_names() if o.startswith(name)]
    if expansions:
        full = ", ".join(expansions)
        raise refuse(
            program,
            name,
            f"{program} option {name} is an abbreviation ({full}); long options must be written out in full.",
            rule=f"{program}: exact option names",
        )
    raise _unknown(program, table, name)


def _short(program: str, table: OptionTable, word: str, rest: Sequence[str], i: int, out: ParsedArgs) -> int:
    j = 1
    while j < len(word):
        option = "-" + word[j]
        attached = word[j + 1 :]
        if option in table.denied:
            raise _unknown(program, table, option)
        if option in table.flags:
            out.options.append((option, None))
            j += 1
            continue
        if option in table.values:
            if attached:
                out.options.append((option, attached))
                return i + 1
            if i + 1 >= len(rest):
                raise refuse(program, option, f"{program} option {option} needs a value.")
            out.options.append((option, rest[i + 1]))
            return i + 2
        if option in table.optional:
            out.options.append((option, attached or None))
            return i + 1
        if table.numeric and word[j].isdigit() and word[j:].isdigit():
            out.options.append(("-NUM", word[j:]))
            return i + 1
        raise _unknown(program, table, option)
    return i + 1


def parse_args(program: str, table: OptionTable, args: Sequence[str]) -> ParsedArgs:
    """Split `args` into allowed options and operands.

    Raises:
        Refused: an option that is not allowed, abbreviated, missing its value, or given a value it takes not.
    """
    out = ParsedArgs()
    i = 0
    while i < len(args):
        word = args[i]
        if out.saw_double_dash or word == "-" or not word.startswith("-"):
            out.operands.append(word)
            if out.saw_double_dash:
                out.after_double_dash.append(word)
            i += 1
        elif word == "--":
            out.saw_double_dash = True
            i += 1
        else:
            before = len(out.options)
            start = i
            i = (_long if word.startswith("--") else _short)(program, table, word, args, i, out)
            out.words += [start] * (len(out.options) - before)
    return out


def table(
    flags: str = "",
    values: str = "",
    optional: str = "",
    denied: Mapping[str, str] | None = None,
    *,
    pairs: str = "",
    numeric: bool = False,
) -> OptionTable:
    """Build an option table from whitespace-separated names; `--help` and `--version` are always allowed."""
    return OptionTable(
        flags=frozenset(flags.split()) | {"--help", "--version"},
        values=frozenset(values.split()),
        optional=frozenset(optional.split()),
        pairs=frozenset(pairs.split()),
        denied=dict(denied or {}),
        numeric=numeric,
    )
