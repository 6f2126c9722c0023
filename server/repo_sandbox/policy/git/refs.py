"""Refs that present an object under another name: notes, replace refs, and what reaches them.

A protected file's blob stays in the object database after the file is deleted. `git replace <blob> <that
blob>` makes `HEAD:README.md` read as the protected content; `git notes add -C <that blob> <commit>` prints it
under every `git log`; the notes ref's commits hold it in a file named after a commit id, which no exclusion
matches. The environment half (`GIT_NO_REPLACE_OBJECTS`, no grafts) lives in `fs.gitenv`; here:
- revisions naming `refs/notes/*` or `refs/replace/*` (any spelling git resolves: `notes/commits`,
  `refs/replace/<id>^{}`, `A..notes/x`, `notes/commits@{1}`) and `@{upstream}`/`@{push}` (the configuration
  of the repository decides which ref they name) are refused;
- every ref-listing option (`--all`, `--glob`, `--branches`, `--tags`, `--remotes`) is preceded by
  `--exclude` of both namespaces (git forgets exclusions after each listing option, so each gets its own);
- the notes commits themselves stay reachable by other names (their object id from `git show-ref`, `:/Notes`,
  a branch that is a symbolic ref to the notes ref): the files of a notes tree, named after the object they
  annotate (`<40 hex>`, `ab/<38 hex>`, ...), are excluded from every git command that prints files
  (`NOTE_EXCLUSIONS`), and a path or `REV:path` naming one is refused.
"""

from __future__ import annotations

import re
from typing import Final

from repo_sandbox.policy._argv import ParsedArgs, refuse
from repo_sandbox.policy.git.revs import split_revision

HIDDEN_NAMESPACES: Final = ("refs/notes/", "refs/replace/")
REF_EXCLUSIONS: Final = tuple(f"--exclude={namespace}*" for namespace in HIDDEN_NAMESPACES)
"""Put before each ref-listing option: `--all` and `--glob` would otherwise walk notes and replace refs."""
REF_LISTING: Final = frozenset({"--all", "--glob", "--branches", "--tags", "--remotes"})
REV_WALKERS: Final = frozenset({"log", "show", "diff", "shortlog", "rev-list", "rev-parse"})
"""The sub-commands whose ref-listing options add revisions (and take `--exclude`); in `branch --all`,
`merge-base --all`, `describe --all`, `show-ref --tags` the options mean something else."""
_HIDDEN_NAME: Final = re.compile(r"^(refs/+)?(notes|replace)(/|$)", re.IGNORECASE)
_CONFIGURED: Final = re.compile(r"@\{\s*(u|upstream|push)\s*\}", re.IGNORECASE)
_NAME_END: Final = re.compile(r"[\^~@:{]")
NOTE_NAME_LENGTHS: Final = (34, 36, 38, 40, 58, 60, 62, 64)
"""Hex digits in a notes tree's file names: a SHA-1 or SHA-256 id less 0-3 levels of two-digit fan-out."""
NOTE_EXCLUSIONS: Final = tuple(f":(exclude,glob,icase,top)**/{'[0-9a-f]' * n}" for n in NOTE_NAME_LENGTHS)
NOTE_READERS: Final = frozenset({"log", "show", "diff", "shortlog", "rev-list", "grep"})
"""The sub-commands that print the files of commits they are named (status and ls-files read the index)."""
_NOTE_NAME: Final = re.compile(r"[0-9a-fA-F]{34,64}")


def check_note_path(path: str) -> None:
    """Refuse a path with a name shaped like a notes tree's file (34 to 64 hex digits).

    Raises: Refused.
    """
    if any(_NOTE_NAME.fullmatch(name) for name in path.split("/")):
        raise refuse(
            "git", path, "a name of 34 to 64 hex digits is how notes store any blob, a protected file's included.",
            rule="git: refs",
        )  # fmt: skip


def check_ref_names(operand: str) -> None:
    """Refuse a revision that names a notes or replace ref, or a ref the repository's configuration picks.

    Raises: Refused.
    """
    split = split_revision(operand)
    revision = split[0] if split is not None else operand
    if _CONFIGURED.search(revision):
        raise refuse(
            "git", operand, "@{upstream} and @{push} name whatever ref the repository's configuration says.",
            rule="git: refs",
        )  # fmt: skip
    for end in re.split(r"\.{2,3}", revision):
        name = _NAME_END.split(end.lstrip("^").strip(), maxsplit=1)[0]
        if _HIDDEN_NAME.match(name):
            raise refuse(
                "git", operand, "notes and replace refs show objects under names the deny-list cannot see.",
                rule="git: refs",
            )  # fmt: skip


def exclude_hidden_refs(subcommand: str, rest: list[str], parsed: ParsedArgs) -> list[str]:
    """`rest` with `REF_EXCLUSIONS` inserted before the word of every ref-listing option of a revision walker."""
    if subcommand not in REV_WALKERS:
        return rest
    starts = {word for (name, _), word in zip(parsed.options, parsed.words, strict=True) if name in REF_LISTING}
    out: list[str] = []
    for index, word in enumerate(rest):
        if index in starts:
            out += REF_EXCLUSIONS
        out.append(word)
    return out
