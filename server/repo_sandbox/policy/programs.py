"""Program rules as data: what each allowed program may be given, and what is forced on it.

A rule is an exact-name option allow-list (see `policy._argv`), the kind of its operands (jailed paths, plain
strings, a pattern then paths), the options whose value is a path, flags the server always adds (`sed
--sandbox`, `gawk --sandbox`, `rg --no-config`), and example command lines that must be allowed or denied;
the examples are checked whenever a policy is built, so a rule that stops matching them fails loudly.
The built-in rules are in `builtin_programs` (plus `find` and `git`); operators add rules in `[exec.rules]`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol

from repo_sandbox.policy._argv import OptionTable, ParsedArgs, parse_args, refuse

OperandKind = Literal["paths", "strings", "none", "pattern+paths", "any"]
"""paths: each jailed; strings: not paths; pattern+paths: the first is a pattern unless a pattern option
was given; any: unchecked (operator-defined programs only)."""

SYSTEM_PATH: Final = "/usr/bin:/bin"
"""The only PATH a sandboxed program gets (`exec.sandbox`); the programs the rules name are found there."""

WRITES: Final = "it writes files"
EXECS: Final = "it runs other programs"
READS_OUTSIDE: Final = "it reads a file named in its value, which bypasses the path jail"
FOLLOWS: Final = "it follows symlinks out of the repository"
BLOCKS: Final = "it waits forever for more input"


class PathChecker(Protocol):
    """Checks paths named in a command; each method raises a graded SandboxError to refuse one."""

    def __call__(self, path: str) -> None:
        """A file or directory the program will open, relative to the call's cwd: it must resolve (symlinks
        included) inside the root, not be denied, and not be a FIFO, socket or device. A missing path is
        allowed (the program reports it)."""
        ...

    def pathspec(self, path: str, *, from_top: bool) -> None:
        """A path git matches against its index or history (it need not exist): it must stay inside the
        root and not be denied. `from_top`: relative to the root rather than the cwd."""
        ...


@dataclass(frozen=True, slots=True)
class ObjectCheck:
    """A name git must resolve before a git stage runs: the stage runs when git finds no such object or
    one whose type is in `allowed` (see `policy.git.revs`)."""

    name: str
    allowed: frozenset[str]
    must_exist: bool = False
    """The stage is refused when git finds no such object (it would take the name as a pathspec)."""


@dataclass(frozen=True, slots=True)
class RenameFollowing:
    """What git blame may walk: the operands that may name revisions, and whether it may name any path of
    git's records (`-C`: lines copied from any file; `--reverse`: followed forward to where a rename adds a
    path) rather than only the sources of the file's own renames."""

    revisions: tuple[str, ...]
    any_path: bool


@dataclass(frozen=True, slots=True)
class StagePlan:
    """What one stage will run: `binary` (a bare name looked up in the sandbox's PATH) and its arguments."""

    program: str
    binary: str
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    needs_git_dir: bool = False
    """True for git: the sandbox shows this stage the repository's .git directory."""
    objects: tuple[ObjectCheck, ...] = ()
    """git: what the named objects must be (resolved by `exec.git.objects` before the run)."""
    single_pathspec: bool = False
    """git --follow takes exactly one pathspec: it runs only when no deny-list exclusion can match anything."""
    follows_renames: RenameFollowing | None = None
    """git blame: it follows a file's renames (and with -C copies) through history and names each line's source
    file, whatever the pathspecs (`exec.git.blame` decides whether it may run)."""


class ProgramRule(Protocol):
    """Anything that can judge one stage of a command."""

    @property
    def name(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def allow_examples(self) -> tuple[str, ...]: ...
    @property
    def deny_examples(self) -> tuple[str, ...]: ...

    def evaluate(self, args: Sequence[str], paths: PathChecker) -> StagePlan: ...


@dataclass(frozen=True, slots=True)
class ProgramSpec:
    """The rule of a program whose arguments are options and operands in the GNU getopt style."""

    name: str
    options: OptionTable
    operands: OperandKind = "paths"
    summary: str = ""
    binary: str | None = None
    max_operands: int | None = None
    path_options: frozenset[str] = frozenset()
    pattern_options: frozenset[str] = frozenset()
    forced: tuple[str, ...] = ()
    parse_options: bool = True
    extra_check: Callable[[ParsedArgs], None] | None = None
    allow_examples: tuple[str, ...] = ()
    deny_examples: tuple[str, ...] = ()

    def evaluate(self, args: Sequence[str], paths: PathChecker) -> StagePlan:
        """Raises: Refused, or the jail's SandboxError for a path operand or path value."""
        binary = self.binary or self.name
        if not self.parse_options:
            return StagePlan(self.name, binary, (*self.forced, *args))
        parsed = parse_args(self.name, self.options, args)
        for name, value in parsed.options:
            if name in self.path_options and value is not None:
                paths(value)
        operands = list(parsed.operands)
        if self.operands == "pattern+paths" and operands and not parsed.has(*self.pattern_options):
            operands = operands[1:]
        if self.operands == "none" and parsed.operands:
            raise refuse(self.name, parsed.operands[0], f"{self.name} takes no operands.")
        if self.max_operands is not None and len(parsed.operands) > self.max_operands:
            extra = parsed.operands[self.max_operands]
            raise refuse(
                self.name,
                extra,
                f"{self.name} accepts at most {self.max_operands} operand(s) here; '{extra}' would be "
                "used as an output file or is not supported.",
            )
        if self.extra_check is not None:
            self.extra_check(parsed)
        if self.operands in ("paths", "pattern+paths"):
            for operand in operands:
                if operand != "-":
                    paths(operand)
        return StagePlan(self.name, binary, (*self.forced, *args))
