"""The rule for `find`: start points jailed, then an allow-list of expression primaries.

find has no option parser of the getopt kind: its "options" are single-dash primaries, matched exactly.
Refused (verified in research/sandbox-and-exec-policy.md): `-exec -execdir -ok -okdir` (run programs),
`-delete`, `-fprint -fprint0 -fprintf -fls` (write files), `-files0-from` (reads a file), `-L -H -follow`
(follow symlinks out of the jail). Primaries that name a reference file (`-newer F`, `-samefile F`) have the
file jailed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from repo_sandbox.policy._argv import refuse
from repo_sandbox.policy.programs import EXECS, FOLLOWS, READS_OUTSIDE, WRITES, PathChecker, StagePlan

OPERATORS: Final = frozenset({"(", ")", "!", ",", "-not", "-a", "-and", "-o", "-or"})


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


NO_VALUE: Final = _names(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable -nouser -nogroup "
    "-depth -d -mount -xdev -noleaf -daystart -ignore_readdir_race -noignore_readdir_race -help --help "
    "-version --version"
)
ONE_VALUE: Final = _names(
    "-name -iname -path -ipath -wholename -iwholename -lname -ilname -regex -iregex -regextype -type -xtype "
    "-size -mtime -mmin -atime -amin -ctime -cmin -perm -maxdepth -mindepth -user -group -uid -gid -links "
    "-inum -used -printf -fstype"
)
PATH_VALUE: Final = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
_NEWER_XY: Final = re.compile(r"-newer([aBcm])([aBcmt])")
DENIED: Final = {
    "-exec": EXECS,
    "-execdir": EXECS,
    "-ok": EXECS,
    "-okdir": EXECS,
    "-delete": "it deletes files",
    "-fprint": WRITES,
    "-fprint0": WRITES,
    "-fprintf": WRITES,
    "-fls": WRITES,
    "-files0-from": READS_OUTSIDE,
    "-follow": FOLLOWS,
    "-L": FOLLOWS,
    "-H": FOLLOWS,
    "-D": "debug options are not allowed",
}


@dataclass(frozen=True, slots=True)
class FindRule:
    name: str = "find"
    summary: str = "find files (no -exec, -delete, -fprint*, -L; start points jailed)"
    allow_examples: tuple[str, ...] = (
        "find . -name '*.py'",
        "find src -type f -newer a.txt -print",
        "find . -maxdepth 2 \\( -name a -o -name b \\) -printf '%p %s\\n'",
        "find . -newermt 2024-01-01",
    )
    deny_examples: tuple[str, ...] = (
        "find . -exec rm {} \\;",
        "find . -execdir sh \\;",
        "find . -delete",
        "find . -fprint out",
        "find -L .",
        "find . -follow",
        "find . -files0-from list",
        "find . -name x -ok true \\;",
        "find . -fls out",
    )

    def evaluate(self, args: Sequence[str], paths: PathChecker) -> StagePlan:
        i = 0
        while i < len(args) and args[i] in ("-P", "-H", "-L", "-D") or (i < len(args) and args[i].startswith("-O")):
            if args[i] != "-P":
                raise refuse("find", args[i], f"find {args[i]} is not allowed: {DENIED.get(args[i], 'not allowed')}.")
            i += 1
        while i < len(args) and not (args[i].startswith("-") or args[i] in OPERATORS):
            paths(args[i])
            i += 1
        while i < len(args):
            i = self._primary(args, i, paths)
        return StagePlan("find", "find", tuple(args))

    def _primary(self, args: Sequence[str], i: int, paths: PathChecker) -> int:
        word = args[i]
        if word in OPERATORS or word in NO_VALUE:
            return i + 1
        if word in DENIED:
            raise refuse("find", word, f"find {word} is not allowed: {DENIED[word]}.")
        newer = _NEWER_XY.fullmatch(word)
        if word in ONE_VALUE or word in PATH_VALUE or newer:
            if i + 1 >= len(args):
                raise refuse("find", word, f"find {word} needs a value.")
            if word in PATH_VALUE or (newer and newer.group(2) != "t"):
                paths(args[i + 1])
            return i + 2
        raise refuse("find", word, f"find primary {word} is not in the allowlist.", rule="find: primaries allowlist")
