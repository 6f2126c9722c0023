"""More built-in rules of read-only programs: encoders, checksums, hex dumps, line tools, small utilities.

Each is an exact-option rule like those of `builtin_programs`, with allow/deny examples checked whenever a
policy is built. What each refused option would do: a file named inside another file (`sha256sum --check`,
`hexdump -f`, `date -f`) is read without the jail; `date -s` and a `date MMDDhhmm` operand set the clock;
a second operand of `xxd` is an output file. `test`/`[` and `xxd` do not parse options the GNU way, so they
have rules of their own below.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import ClassVar, Final

from repo_sandbox.policy._argv import ParsedArgs, refuse, table
from repo_sandbox.policy.programs import READS_OUTSIDE, SYSTEM_PATH, WRITES, PathChecker, ProgramSpec, StagePlan

_CHECKSUM_DENIED: Final = {
    "-c": f"{READS_OUTSIDE} (the files a checksum list names)",
    "--check": f"{READS_OUTSIDE} (the files a checksum list names)",
}


def _checksum(name: str) -> ProgramSpec:
    return ProgramSpec(
        name,
        table("-b -t -z --binary --text --zero --tag", denied=_CHECKSUM_DENIED),
        summary="checksums of files (no --check)",
        allow_examples=(f"{name} README.md", f"{name} --tag a b"),
        deny_examples=(f"{name} -c sums.txt", f"{name} --check sums.txt", f"{name} --che sums.txt"),
    )


def _date_check(parsed: ParsedArgs) -> None:
    for operand in parsed.operands:
        if not operand.startswith("+"):
            raise refuse("date", operand, "date only prints: an operand must be a +FORMAT (another sets the clock).")


def _which_check(parsed: ParsedArgs) -> None:
    for operand in parsed.operands:
        if "/" in operand:
            raise refuse("which", operand, "which looks names up in the sandbox's PATH; give a name, not a path.")


@cache
def _which_binary() -> str:
    """Debian's /usr/bin/which is a link through /etc/alternatives, which no sandbox shows: name its target."""
    found = shutil.which("which", path=SYSTEM_PATH)
    real = os.path.realpath(found) if found else ""
    return os.path.basename(real) if os.path.dirname(real) in SYSTEM_PATH.split(":") else "which"


@dataclass(frozen=True, slots=True)
class TestRule:
    """`test` and `[`: an expression whose file tests name paths, each jailed (whatever else it holds)."""

    name: str
    summary: str = "evaluate an expression (file tests jailed)"
    allow_examples: tuple[str, ...] = ()
    deny_examples: tuple[str, ...] = ()

    UNARY_FILE: ClassVar[frozenset[str]] = frozenset(
        [
            "-b",
            "-c",
            "-d",
            "-e",
            "-f",
            "-g",
            "-G",
            "-h",
            "-k",
            "-L",
            "-N",
            "-O",
            "-p",
            "-r",
            "-s",
            "-S",
            "-u",
            "-w",
            "-x",
        ]
    )
    BINARY_FILE: ClassVar[frozenset[str]] = frozenset({"-ef", "-nt", "-ot"})

    def evaluate(self, args: Sequence[str], paths: PathChecker) -> StagePlan:
        """Jails every word after a unary file test and both sides of a binary one (more than test may
        read as a path, never less)."""
        if self.name == "[" and (not args or args[-1] != "]"):
            raise refuse("[", args[-1] if args else "[", "'[' needs a closing ']' as its last argument.")
        for index, word in enumerate(args):
            if word in self.UNARY_FILE and index + 1 < len(args):
                paths(args[index + 1])
            if word in self.BINARY_FILE:
                for side in (args[index - 1] if index else None, args[index + 1] if index + 1 < len(args) else None):
                    if side is not None:
                        paths(side)
        return StagePlan(self.name, self.name, tuple(args))


@dataclass(frozen=True, slots=True)
class XxdRule:
    """xxd's own option syntax: whole words (`-ps` is one option, not `-p -s`), values as the next word;
    at most one operand, the input (a second would be written to)."""

    name: str = "xxd"
    summary: str = "hex dump (one input operand; no output file)"
    allow_examples: tuple[str, ...] = ("xxd a.bin", "xxd -p -c 32 a.bin", "xxd -s 16 -l 64 -g 1 a", "xxd -r -p")
    deny_examples: tuple[str, ...] = ("xxd a.bin out.bin", "xxd -cols 8 a", "xxd -c16 a", "xxd -r a b")

    FLAGS: ClassVar[frozenset[str]] = frozenset(
        ["-a", "-b", "-C", "-E", "-e", "-i", "-p", "-ps", "-u", "-r", "-d", "-h", "-v"]
    )
    VALUES: ClassVar[frozenset[str]] = frozenset(["-c", "-g", "-l", "-o", "-s", "-n"])

    def evaluate(self, args: Sequence[str], paths: PathChecker) -> StagePlan:
        operands: list[str] = []
        index = 0
        while index < len(args):
            word = args[index]
            if word in self.VALUES:
                if index + 1 >= len(args):
                    raise refuse("xxd", word, f"xxd option {word} needs a value.")
                index += 2
                continue
            if word.startswith("-") and word != "-" and word not in self.FLAGS:
                raise refuse("xxd", word, f"xxd option {word} is not in the allowlist.", rule="xxd: options allowlist")
            if not word.startswith("-") or word == "-":
                operands.append(word)
            index += 1
        if len(operands) > 1:
            raise refuse("xxd", operands[1], f"xxd writes to a second operand ('{operands[1]}'): {WRITES}.")
        for operand in operands:
            if operand != "-":
                paths(operand)
        return StagePlan(self.name, self.name, tuple(args))


MORE_SPECS: Final[tuple[ProgramSpec, ...]] = (
    ProgramSpec(
        "base64",
        table("-d -i --decode --ignore-garbage", "-w --wrap"),
        max_operands=1,
        summary="encode or decode base64 to stdout",
        allow_examples=("base64 a.bin", "base64 -d a.b64", "base64 -w 0 a"),
        deny_examples=("base64 -o out a", "base64 --output=out a", "base64 a b", "base64 --dec a"),
    ),
    *(_checksum(name) for name in ("md5sum", "sha1sum", "sha256sum", "sha512sum")),
    ProgramSpec(
        "od",
        table(
            "-a -b -c -d -f -i -l -o -s -x -v --output-duplicates",
            "-A -j -N -S -t --address-radix --skip-bytes --read-bytes --format --endian",
            "-w --width --strings",
            denied={"--traditional": "its operands are offsets and labels, not only files"},
        ),
        summary="octal and other dumps of files",
        allow_examples=("od -c a.bin", "od -A x -t x1z -N 64 a", "od -w16 a"),
        deny_examples=("od --traditional a 10", "od --tradit a"),
    ),
    ProgramSpec(
        "hexdump",
        table(
            "-b -c -C -d -o -x -v --one-byte-octal --one-byte-char --canonical --two-bytes-decimal "
            "--two-bytes-octal --two-bytes-hex --no-squeezing",
            "-e -n -s --format --length --skip",
            "-L --color",
            denied={"-f": READS_OUTSIDE, "--format-file": READS_OUTSIDE},
        ),
        summary="hex dump of files (no -f)",
        allow_examples=("hexdump -C a.bin", "hexdump -n 64 -s 16 -C a"),
        deny_examples=("hexdump -f fmt a", "hexdump --format-file=fmt a"),
    ),
    ProgramSpec(
        "comm",
        table("-1 -2 -3 -z --check-order --nocheck-order --total --zero-terminated", "--output-delimiter"),
        max_operands=2,
        summary="compare two sorted files",
        allow_examples=("comm -12 a.txt b.txt", "comm --output-delimiter=, a b"),
        deny_examples=("comm --out=, a b",),
    ),
    ProgramSpec(
        "paste",
        table("-s -z --serial --zero-terminated", "-d --delimiters"),
        summary="merge lines of files",
        allow_examples=("paste a.txt b.txt", "paste -sd, a"),
        deny_examples=("paste --ser a",),
    ),
    ProgramSpec(
        "join",
        table(
            "-i --ignore-case --check-order --nocheck-order --header -z --zero-terminated",
            "-a -e -j -o -t -v -1 -2",
        ),
        max_operands=2,
        summary="join lines of two files on a common field",
        allow_examples=("join a.txt b.txt", "join -t, -1 2 -2 1 a b"),
        deny_examples=("join --ignore a b",),
    ),
    ProgramSpec(
        "expand",
        table("-i --initial", "-t --tabs", numeric=True),
        summary="convert tabs to spaces",
        allow_examples=("expand -t 4 a.txt", "expand -4 a"),
        deny_examples=("expand --tab=4 a",),
    ),
    ProgramSpec(
        "fold",
        table("-b -s --bytes --spaces", "-w --width", numeric=True),
        summary="wrap lines",
        allow_examples=("fold -w 80 a.txt", "fold -sw40 a"),
        deny_examples=("fold --wid=8 a",),
    ),
    ProgramSpec(
        "fmt",
        table(
            "-c -s -t -u --crown-margin --split-only --tagged-paragraph --uniform-spacing",
            "-p -w -g --prefix --width --goal",
            numeric=True,
        ),
        summary="reformat paragraphs",
        allow_examples=("fmt -w 72 a.txt", "fmt -60 a"),
        deny_examples=("fmt --wid=8 a",),
    ),
    ProgramSpec(
        "rev",
        table("-0 --zero"),
        summary="reverse the characters of lines",
        allow_examples=("rev a.txt",),
        deny_examples=("rev --ze a",),
    ),
    ProgramSpec(
        "seq",
        table("-w --equal-width", "-f -s --format --separator", numeric=True),
        operands="strings",
        max_operands=3,
        summary="print a sequence of numbers",
        allow_examples=("seq 10", "seq -w 1 2 10", "seq -s, 3"),
        deny_examples=("seq --equal 3", "seq 1 2 3 4"),
    ),
    ProgramSpec(
        "sleep",
        table(),
        operands="strings",
        summary="wait (bounded by the command's timeout)",
        allow_examples=("sleep 1", "sleep 0.5s"),
        deny_examples=("sleep --x 1",),
    ),
    ProgramSpec(
        "which",
        table("-a -s"),
        binary=_which_binary(),
        operands="strings",
        extra_check=_which_check,
        summary="find programs in the sandbox's PATH",
        allow_examples=("which git", "which -a python3 rg"),
        deny_examples=("which ../x", "which /etc/passwd"),
    ),
    ProgramSpec(
        "date",
        table(
            "-R -u --rfc-email --utc --universal --debug",
            "-d -r --date --reference --rfc-3339",
            "-I --iso-8601",
            denied={
                "-s": "it sets the clock",
                "--set": "it sets the clock",
                "-f": READS_OUTSIDE,
                "--file": READS_OUTSIDE,
            },
        ),
        operands="strings",
        max_operands=1,
        path_options=frozenset({"-r", "--reference"}),
        extra_check=_date_check,
        summary="print the date (no -s, no clock-setting operand)",
        allow_examples=("date", "date -u +%Y-%m-%dT%H:%M:%SZ", "date -d @0 -I", "date --date='1 day ago'"),
        deny_examples=("date -s 2020-01-01", "date --set=x", "date 0101000020", "date -f dates"),
    ),
    ProgramSpec(
        "numfmt",
        table(
            "--debug --grouping -z --zero-terminated",
            "-d --delimiter --field --format --from --from-unit --invalid --padding --round --suffix --to --to-unit",
            "--header",
        ),
        operands="strings",
        summary="format numbers",
        allow_examples=("numfmt 1000", "numfmt --to=iec 1048576", "numfmt --from=si 1K"),
        deny_examples=("numfmt --to-u=2 1",),
    ),
    ProgramSpec(
        "printenv",
        table("-0 --null"),
        operands="strings",
        summary="print the sandbox's own environment",
        allow_examples=("printenv", "printenv PATH"),
        deny_examples=("printenv --nul",),
    ),
    ProgramSpec(
        "expr",
        table(),
        operands="strings",
        parse_options=False,
        summary="evaluate an expression",
        allow_examples=("expr 1 + 2", "expr length abc"),
        deny_examples=(),
    ),
)
"""The rules of this module that are ProgramSpecs (`test`, `[` and `xxd` are built in `more_rules`)."""


def more_rules() -> tuple[TestRule | XxdRule | ProgramSpec, ...]:
    test_examples = ("test -f README.md", "test a = b")
    return (
        *MORE_SPECS,
        XxdRule(),
        TestRule("test", allow_examples=test_examples, deny_examples=("test -f /etc/passwd", "test -d ..")),
        TestRule("[", allow_examples=("[ -d src ]", "[ -n x ]"), deny_examples=("[ -f /etc/passwd ]", "[ -d .. ]")),
    )
