"""The rule for `git`: read-only sub-commands, exact option allow-lists, jailed paths, forced hardening.

- Global options are all refused (`-c k=v` aliases, `-C`, `--git-dir`, `--work-tree`, `--exec-path`,
  `-p`, `--config-env`, `--namespace`, ...). Only the sub-commands of `policy.git.commands` run, so aliases
  are never resolved.
- Options are exact names (git's parse-options accepts abbreviations: `git grep --open-files-in=true`).
- `--no-ext-diff --no-textconv` are forced where diffs are made; the environment half of the hardening
  (`GIT_CONFIG_*` overrides neutralising `.git/config`) lives in `fs.gitenv`. Nothing may start git inside a
  submodule, where the submodule's own configuration applies: `--submodule=diff`, `describe --dirty` and
  `--ignore-submodules=none|untracked` are refused, `--ignore-submodules=dirty` is forced on status and diff.
- Every operand is jail-checked: revisions like `HEAD:path` have their path checked against the deny-list,
  anything path-like must stay inside (this also refuses the implicit `--no-index` of `git diff /dev/null F`).
- Sub-commands that print file names or contents get the deny-list appended as exclude pathspecs, so a denied
  file tracked by git stays hidden from `git log -p`, `git grep`, `git ls-files`, ... and after them the
  exclusion of every path with a non-ASCII name (`NON_ASCII_EXCLUSIONS`: git compares bytes, the deny-list
  NFKC forms), which `exec.git.excludes` narrows to the names the deny-list refuses once it knows them.
  `--follow` allows one pathspec only: it runs when no exclusion can match anything in the repository.
- Objects named without a path (`git show <blob id>`, `HEAD^{tree}`, a tag of a blob, a subtree) are
  resolved before the command runs and must be commits, or files as `REV:path` (`policy.git.revs`). `show`
  takes no ref-listing options (`--all`, `--tags`, ... reach tags of blobs), and `branch`/`tag --format` no
  `%(raw)` (an object's content). Notes and replace refs stay out of every revision (`policy.git.refs`).
  `describe` takes commits only (it names the path
  of a blob). Option values that are revisions (`--default`, `--find-object`, ...) are checked like operands.
- Options that print past the pathspecs are refused (`--full-diff`, `--pickaxe-all`, `status -v`); `blame`,
  which follows renames and names each line's source file, runs only where no commit it may walk deletes a
  protected path (with `-C`: only while git's records hold no protected name at all): `exec.git.blame`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from repo_sandbox.policy._argv import ParsedArgs, parse_args, refuse
from repo_sandbox.policy.git.commands import (
    DENIED_SUBCOMMANDS,
    REVISION_VALUES,
    SUBCOMMANDS,
    Subcommand,
    check_submodule_options,
)
from repo_sandbox.policy.git.refs import (
    NOTE_EXCLUSIONS,
    NOTE_READERS,
    check_note_path,
    check_ref_names,
    exclude_hidden_refs,
)
from repo_sandbox.policy.git.revs import RESOLVING, object_checks, split_revision
from repo_sandbox.policy.programs import ObjectCheck, PathChecker, RenameFollowing, StagePlan

TRAILING_DOTS_OR_SPACES: Final = "[. ]*"
"""Appended to an exclusion's name: the same name followed by dots and spaces (and, wider, anything)."""
MAX_EXACT_NAMES: Final = 3
"""Names per rule given both spellings (2**n exclusions); a longer rule widens all but its last name."""
_NON_ASCII_NAME: Final = "*[!\x01-\x7f]*"
"""A name holding a byte outside ASCII: git's glob matches bytes, and no name holds a NUL."""
NON_ASCII_EXCLUSIONS: Final = (
    f":(exclude,glob,top)**/{_NON_ASCII_NAME}",
    f":(exclude,glob,top)**/{_NON_ASCII_NAME}/**",
)
"""Every path with a non-ASCII name at any depth. The deny-list matches names NFKC-normalised and case-folded
(`secret.ｋｅｙ` is `secret.key` to it), git compares bytes: until the non-ASCII names git could show are
known and judged one by one (`exec.git.excludes`), none may show."""
_GLOB_SPECIAL: Final = re.compile(r"([*?\[\]\\])")


def name_exclusions(name: str) -> tuple[str, str]:
    """Exclusions of every path with a name exactly `name`: a file of that name, a directory and all beneath."""
    literal = _GLOB_SPECIAL.sub(r"\\\1", name)
    return f":(exclude,glob,icase,top)**/{literal}", f":(exclude,glob,icase,top)**/{literal}/**"


def exclusion_pathspecs(deny_patterns: Iterable[str]) -> tuple[str, ...]:
    """The deny-list (gitignore syntax) as git exclude pathspecs, matched from the top, case-insensitively."""
    specs: list[str] = []
    for raw in deny_patterns:
        pattern = raw.strip()
        if not pattern or pattern.startswith(("#", "!")):
            continue  # a negation would un-deny; ignoring it keeps more hidden, never less
        directory_only = pattern.endswith("/")
        pattern = pattern.rstrip("/")
        anchored = "/" in pattern
        pattern = pattern.lstrip("/")
        for body in _trailing_variants(_ascii_glob(pattern if anchored else f"**/{pattern}")):
            if not directory_only:
                specs.append(f":(exclude,glob,icase,top){body}")
            specs.append(f":(exclude,glob,icase,top){body}/**")
    return (*specs, *NON_ASCII_EXCLUSIONS) if specs else ()


def _trailing_variants(body: str) -> list[str]:
    """`body` with each of its names also followed by trailing dots or spaces, in every combination.

    The deny-list takes any name of a path with trailing dots or spaces for the name itself (`server.pem.`,
    `.docker./config.json`). A name ending in `*` already matches them. Past `MAX_EXACT_NAMES` such names,
    the ones before the last become `name*` (wider: hides more, never less) instead of doubling the list.
    """
    segments = body.split("/")
    open_ended = [i for i, seg in enumerate(segments) if not _ends_in_wildcard(seg)]
    if len(open_ended) > MAX_EXACT_NAMES:
        for index in open_ended[:-1]:
            segments[index] += "*"
        open_ended = open_ended[-1:]
    variants = [segments]
    for index in open_ended:
        variants += [[*v[:index], v[index] + TRAILING_DOTS_OR_SPACES, *v[index + 1 :]] for v in variants]
    return ["/".join(v) for v in variants]


def _ends_in_wildcard(segment: str) -> bool:
    """Whether the segment ends with an unescaped `*` (an odd number of backslashes before it escapes it)."""
    stem = segment.removesuffix("*")
    return stem != segment and (len(stem) - len(stem.rstrip("\\"))) % 2 == 0


def _ascii_glob(pattern: str) -> str:
    """`pattern` with every non-ASCII character (or bracket class or escape holding one) widened to `*`.

    The deny-list matches names after Unicode normalisation and case folding; git compares bytes and folds
    ASCII only, so `résumé` written decomposed would slip past a literal `é`. Wider excludes hide more, never less.
    """
    if pattern.isascii():
        return pattern
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        end = index + 1
        if char == "\\":
            end = min(index + 2, len(pattern))
        elif char == "[":
            close = pattern.find("]", index + 2)
            end = close + 1 if close > 0 else end
        piece = pattern[index:end]
        if piece.isascii():
            out.append(piece)
        elif not out or out[-1] != "*":
            out.append("*")
        index = end
    return "".join(out)


def _split_pathspec_magic(spec: str) -> tuple[str, bool, bool]:
    """(path, from_top, is_exclude) for a pathspec with `:(...)` or short `:/!^` magic."""
    if spec.startswith(":("):
        close = spec.find(")")
        magic = {m.split(":")[0] for m in spec[2:close].split(",")} if close > 0 else set[str]()
        return spec[close + 1 :] if close > 0 else "", "top" in magic, "exclude" in magic
    if spec.startswith(":") and len(spec) > 1 and spec[1] in "/!^":
        i = 1
        while i < len(spec) and spec[i] in "/!^":
            i += 1
        body = spec[i + 1 :] if i < len(spec) and spec[i] == ":" else spec[i:]
        return body, "/" in spec[1:i], any(c in "!^" for c in spec[1:i])
    return spec, False, False


@dataclass(frozen=True, slots=True)
class GitRule:
    deny_patterns: tuple[str, ...] = ()
    name: str = "git"
    summary: str = "git read-only sub-commands: " + ", ".join(SUBCOMMANDS)
    allow_examples: tuple[str, ...] = (
        "git log --oneline -5",
        "git diff HEAD~1 --stat",
        "git status --short",
        "git show HEAD:README.md",
        "git grep -n TODO -- src",
        "git blame -L 1,20 README.md",
        "git branch -a",
        "git tag --list 'v*'",
        "git cat-file -t HEAD",
        "git stash list",
        "git log -p --follow -- src/a.py",
    )
    deny_examples: tuple[str, ...] = field(
        default=(
            "git -c alias.x=!sh x",
            "git -C /tmp log",
            "git --git-dir=/tmp/x log",
            "git --exec-path=/tmp log",
            "git -p log",
            "git config --get user.name",
            "git st",
            "git log --output=out",
            "git grep -O x",
            "git grep --open-files-in=true x",
            "git diff --ext-diff",
            "git diff --no-index a b",
            "git diff /dev/null /etc/passwd",
            "git blame --contents /etc/passwd a",
            "git cat-file --filters HEAD:a",
            "git ls-files --exclude-from=/etc/passwd",
            "git branch new-branch",
            "git tag -v v1",
            "git push",
            "git show HEAD:.env",
            "git log --show-signature",
            "git log -p --submodule=diff",
            "git describe --dirty",
            "git stash",
        )
    )

    def evaluate(self, args: Sequence[str], paths: PathChecker) -> StagePlan:
        if not args:
            raise refuse("git", "(none)", "git needs a sub-command, e.g. 'git status'.")
        first = args[0]
        if first.startswith("-"):
            raise refuse("git", first, f"git global option {first} is not allowed.", rule="git: global options")
        name, rest = first, list(args[1:])
        if name == "stash":
            if not rest or rest[0] != "list":
                raise refuse("git", "stash", "only 'git stash list' is allowed.", rule="git: sub-commands")
            name, rest = "stash list", rest[1:]
        sub = SUBCOMMANDS.get(name)
        if sub is None:
            reason = DENIED_SUBCOMMANDS.get(name, "not in the allowlist (aliases are not resolved)")
            raise refuse("git", name, f"git {name} is not allowed: {reason}.", rule="git: sub-commands")
        parsed = parse_args(f"git {name}", sub.options, rest)
        if sub.check is not None:
            sub.check(parsed)
        check_submodule_options(parsed)
        objects = self._check_operands(sub, parsed, paths)
        rest = exclude_hidden_refs(name, rest, parsed)
        head = tuple(name.split())
        tail: tuple[str, ...] = ()
        if _two_files(sub, parsed):
            objects = tuple(replace(check, must_exist=True) for check in objects)
        elif sub.excludes:
            tail = exclusion_pathspecs(self.deny_patterns)
        follow = bool(tail) and parsed.has("--follow")  # one pathspec only: its own, never a note's name
        notes = NOTE_EXCLUSIONS if tail and not follow and name in NOTE_READERS else ()
        return StagePlan(
            "git", "git", (*head, *sub.forced, *rest, *notes, *tail), needs_git_dir=True,
            objects=objects, single_pathspec=follow,
            follows_renames=_blame_walk(parsed) if name == "blame" else None,
        )  # fmt: skip

    @staticmethod
    def _check_operands(sub: Subcommand, parsed: ParsedArgs, paths: PathChecker) -> tuple[ObjectCheck, ...]:
        """Jail-checks every path; returns what the objects named by revisions must be."""
        resolves = sub.name in RESOLVING and (sub.name != "cat-file" or parsed.has("-p", "-s"))
        for value in parsed.values_of(*REVISION_VALUES):
            _check_revision(value, paths)
        objects = [check for value in parsed.values_of("--with-tree") for check in object_checks(value, sub.name)]
        operands = list(parsed.operands)
        after = set(range(len(operands) - len(parsed.after_double_dash), len(operands)))
        if sub.operands == "pattern+revs+paths" and operands and not parsed.has("-e") and 0 not in after:
            operands[0] = ""
        if sub.operands == "none" and operands:
            raise refuse("git", operands[0], f"git {sub.name} takes no operands here.")
        for index, operand in enumerate(operands):
            if not operand or sub.operands == "names":
                continue
            if index in after or sub.operands == "paths":
                path, from_top, exclude = _split_pathspec_magic(operand)
                if not exclude and path:
                    check_note_path(path)
                    paths.pathspec(path, from_top=from_top)
                continue
            if sub.name == "blame" and not parsed.saw_double_dash:
                check_note_path(operand)  # `blame FILE REV` works too: which is the file shows only with `--`
            _check_revision(operand, paths)
            if resolves and not operand.startswith(":("):
                objects.extend(object_checks(operand, sub.name))
        return tuple(objects)


def _blame_walk(parsed: ParsedArgs) -> RenameFollowing:
    before = len(parsed.operands) - len(parsed.after_double_dash)
    # --reverse follows lines forward, to where a rename *adds* a path: any protected name could be one
    return RenameFollowing(tuple(parsed.operands[:before]), any_path=parsed.has("-C", "--reverse"))


def _two_files(sub: Subcommand, parsed: ParsedArgs) -> bool:
    """`git diff REV:a REV:b`: two blobs (paths checked; that they exist and are blobs is proved before the
    run, else git would take them as pathspecs), which git compares only without pathspecs."""
    if sub.name != "diff" or len(parsed.operands) != 2 or parsed.saw_double_dash:
        return False
    splits = [split_revision(operand) for operand in parsed.operands]
    return all(split is not None and split[1] for split in splits)


def _check_revision(operand: str, paths: PathChecker) -> None:
    """A revision, or a path git may take for one: `REV:path` paths obey the deny-list; paths stay inside."""
    if operand.startswith(":("):
        path, from_top, exclude = _split_pathspec_magic(operand)
        if not exclude and path:
            check_note_path(path)
            paths.pathspec(path, from_top=from_top)
        return
    if operand.startswith(":/"):
        if operand[2:]:  # a search of commit messages, or (when none matches) a pathspec from the top
            paths.pathspec(operand[2:], from_top=True)
        return
    check_ref_names(operand)
    split = split_revision(operand)
    if split is None:
        paths.pathspec(operand, from_top=False)
        return
    path = split[1]
    check_note_path(path)
    if path.startswith(("./", "../")):
        paths.pathspec(path, from_top=False)
    elif path:
        paths.pathspec(path, from_top=True)
