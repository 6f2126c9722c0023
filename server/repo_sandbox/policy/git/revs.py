"""Revisions on a git command line: how git splits them, and what must be proved about the objects they name.

A path check covers `REV:path`, but an object id, a tag or `REV^{tree}` names a blob or a tree with no path:
`git show <blob id>` prints a protected file, `git cat-file -p HEAD^{tree}` lists protected names,
`git grep -e . <blob id>` or `git diff <blob id> <blob id>` print the blob, and a subtree (`<tree id>`,
`REV:dir`) puts its files at the top, where anchored exclusions (`config/secrets.yaml`, `keys/`) no longer
match them. So every revision operand of `show`, `cat-file -p`, `diff`, `grep`, `log`, `shortlog` and
`rev-list`, and the value of `ls-files --with-tree`, becomes `ObjectCheck`s that the exec layer resolves
with git before the command runs (`exec.git.objects`). The command runs only when each name is missing (git
then takes it as a path or fails by itself) or resolves to an allowed type:
- a plain revision, peeled (`^{}` follows tags): a commit;
- `REV:path` (its path already checked against the deny-list): REV peels to a commit, and the whole is a blob;
  `REV:` (the root tree) may be a tree for diff and grep, where the exclusion pathspecs apply to it;
- both ends of a range are checked as well as the operand as a whole, so whichever way git reads it is covered.
"""

from __future__ import annotations

import re
from typing import Final

from repo_sandbox.policy._argv import refuse
from repo_sandbox.policy.programs import ObjectCheck

COMMIT: Final = frozenset({"commit"})
BLOB: Final = frozenset({"blob"})
BLOB_OR_TREE: Final = frozenset({"blob", "tree"})
NOTHING: Final = frozenset[str]()
RESOLVING: Final = frozenset({"show", "cat-file", "diff", "grep", "log", "shortlog", "rev-list", "describe"})
"""The sub-commands whose revision operands are resolved (cat-file only with -p and -s: a tree's size is the
length of its entries' names, a protected one's included)."""
COMMITS_ONLY: Final = frozenset({"describe"})
"""Sub-commands whose operands must be commits, whatever their form: `git describe <blob>` prints
`<commit>:<path>`, the first path in history holding that content, a protected one included."""

_WALK_SUFFIX: Final = re.compile(r"\^(@|!|-\d*)$")
"""`A^@` (parents), `A^!` (A alone), `A^-N` (A^N..A): the object is A."""


def split_revision(operand: str) -> tuple[str, str] | None:
    """(revision, path) of `REV:path` as git splits it, None for a plain revision.

    git ignores a colon inside `{...}` (`HEAD^{/fix: x}:path`); `:path` and `:N:path` name the index (revision
    ''); `:/text` searches commit messages and is a plain revision.
    """
    if operand.startswith(":/"):
        return None
    if operand.startswith(":"):
        if re.match(r":[0-3]:", operand):
            return "", operand[3:]
        return "", operand[1:]
    depth = 0
    for index, char in enumerate(operand):
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == ":" and not depth:
            return operand[:index], operand[index + 1 :]
    return None


def _range_ends(operand: str) -> list[str]:
    """The revisions git may read out of one operand taken as a range or a walk (`A..B`, `^A`, `A^!`)."""
    ends: list[str] = []
    for part in re.split(r"\.{2,3}", operand) if ".." in operand else [operand]:
        end = _WALK_SUFFIX.sub("", part.removeprefix("^"))
        if end and end != operand:
            ends.append(end)
    return ends


def object_checks(operand: str, subcommand: str) -> tuple[ObjectCheck, ...]:
    """What the exec layer must prove about `operand` before `git <subcommand>` runs with it."""
    if "\n" in operand or "\r" in operand:
        raise refuse("git", operand, "a git revision cannot contain a line break.", rule="git: revisions")
    if subcommand in COMMITS_ONLY:  # `REV:path^{}` would be a path ending in `^{}`: no peeling there
        return (ObjectCheck(operand, COMMIT) if split_revision(operand) else _commit(operand),)
    root_tree_ok = subcommand in ("diff", "grep")
    checks = list(_whole(operand, root_tree_ok))
    for end in _range_ends(operand):
        checks.append(ObjectCheck(end, NOTHING) if split_revision(end) else _commit(end))
    return tuple(checks)


def _commit(name: str) -> ObjectCheck:
    if name.startswith(":/"):
        return ObjectCheck(name, COMMIT)  # the rest is a regex: `^{}` would become part of it
    return ObjectCheck(f"{name}^{{}}", COMMIT)


def _whole(operand: str, root_tree_ok: bool) -> list[ObjectCheck]:
    split = split_revision(operand)
    if split is None:
        return [_commit(operand)]
    revision, path = split
    whole = ObjectCheck(operand, BLOB_OR_TREE if root_tree_ok and not path else BLOB)
    return [_commit(revision), whole] if revision else [whole]
