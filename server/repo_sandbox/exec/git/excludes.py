"""Pass git only the deny-list exclude pathspecs that can match a name git could show.

The policy appends the whole deny-list to every git command that prints names or contents, as exclude
pathspecs (`policy.git.rule.exclusion_pathspecs`: two to four per rule and a pair for non-ASCII names, 84 for
the defaults). git matches every path it considers against each of them: +1.5 ms for `git status` on a 120-file repository, growing with both.
Most rules match nothing in a given repository; their pathspecs exclude nothing and only cost time.

Why dropping them changes nothing. A pathspec body in `glob` magic is a `/`-separated list of segments;
a segment other than `**` matches exactly one path component, and every run of literal characters in it
must appear in that component: at its start when the segment starts with it, at its end when the segment
ends with it, as the whole component when the segment has no wildcard. Each run becomes a *needle*
(`" run"`, `"run\\0"`, `" run\\0"` or `"run"`, lowercased: `icase` folds ASCII only), and a pathspec can
match a path only if every one of its needles occurs in `" component\\0"` for a component of that path.
`exec.git.names` finds which needles occur among all the names git could show: the index, every tree object
(reachable or not), and the working tree's denied entries (from the repository view; the OS sandbox
already hides them, so this is a second line). A pathspec with a needle found nowhere matches no path git
can see; leaving it out cannot change git's output. Anything not understood (character classes, escapes,
non-ASCII, magic other than glob) keeps its pathspec. At least one exclude is always kept, so that commands
that walk history keep the same path-limited simplification as with the whole list; except for `--follow`,
which takes one pathspec only and runs with none when none is needed (its own pathspec limits the walk).

Non-ASCII names. git compares bytes where the deny-list compares NFKC forms, so the policy's list ends with
the exclusion of every path with a non-ASCII name (`policy.git.rule.NON_ASCII_EXCLUSIONS`). Once the names git
could show are known (`exec.git.names` collects every non-ASCII one; the repository view adds the working
tree's denied ones), that pair is replaced by exact exclusions of the names the deny-list refuses
(`exec.git.foreign`): none at all in a repository whose refused names are all ASCII. While they are unknown,
or too many, the pair stays (fail closed: no non-ASCII path shows).

The answer can go stale between `prune` and the end of the command (a `git add .env` in that window); the
caller runs the command again with every exclusion when `unchanged` says anything moved in the meantime.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from repo_sandbox.exec.git.foreign import ForeignNames
from repo_sandbox.exec.git.names import Found, GitNames, NeedleSearch, component_haystack
from repo_sandbox.exec.git.records import foreign_components
from repo_sandbox.exec.view import RepoView, ViewCache
from repo_sandbox.fs.gitenv import GitHardening
from repo_sandbox.policy.git.rule import NON_ASCII_EXCLUSIONS, TRAILING_DOTS_OR_SPACES, GitRule, exclusion_pathspecs

SCAN_WAIT_S: Final = 0.5
"""How long a command waits for a scan of git's records (the first one, or one after a change) before it runs
with every exclusion instead."""
_BREAK: Final = re.compile(r"[^\x20-\x7e]|[*?]")
"""What ends a literal run: a wildcard, a control character or a non-ASCII character (bytes vary)."""


def spec_needles(spec: str) -> frozenset[bytes] | None:
    """The needles of an exclude pathspec in glob magic; None when it must always be passed."""
    if not spec.startswith(":("):
        return None
    close = spec.find(")")
    magic = set(spec[2:close].split(",")) if close > 0 else set[str]()
    # '[. ]' matches one character, as '?' does: every needle of the '?' form is one of the '[. ]' form too.
    body = spec[close + 1 :].replace(TRAILING_DOTS_OR_SPACES, "?*")
    if "glob" not in magic or "literal" in magic or not body or any(c in body for c in "[]\\"):
        return None
    needles: set[bytes] = set()
    for segment in body.split("/"):
        if segment == "**":
            continue
        runs = _BREAK.split(segment)
        if not segment:
            return None
        if len(runs) == 1:
            needles.add(b" " + segment.lower().encode() + b"\0")
            continue
        first, *middle, last = runs
        if first:
            needles.add(b" " + first.lower().encode())
        if last:
            needles.add(last.lower().encode() + b"\0")
        needles.update(run.lower().encode() for run in middle if run)
    return frozenset(needles)


@dataclass(frozen=True, slots=True)
class PruneCheck:
    """What a pruned command was built from; `ExcludePruner.unchanged` compares it after the run."""

    generation: int
    view: RepoView


class ExcludePruner:
    """Drops the deny-list exclusions that cannot match anything from git argument lists of one repository."""

    def __init__(
        self, deny_patterns: tuple[str, ...], git_dir: str, git_binary: str | None, env: Callable[[], dict[str, str]]
    ):
        self.tail = exclusion_pathspecs(deny_patterns)
        self.needles = [spec_needles(spec) for spec in self.tail]
        self._non_ascii = [spec in NON_ASCII_EXCLUSIONS for spec in self.tail]
        every = frozenset(needle for needles in self.needles if needles is not None for needle in needles)
        self.names = GitNames(git_dir, git_binary, env, every)
        self.foreign = ForeignNames(deny_patterns)
        self._kept: dict[tuple[frozenset[bytes], tuple[str, ...] | None], tuple[str, ...]] = {}

    @classmethod
    def for_rule(cls, rule: object, hardening: GitHardening) -> ExcludePruner:
        """The pruner for the repository of `hardening`, when `rule` is the built-in git rule."""
        patterns = rule.deny_patterns if isinstance(rule, GitRule) else ()
        return cls(patterns, os.path.join(hardening.root, ".git"), hardening.git_binary, hardening.host_env)

    def close(self) -> None:
        self.names.close()

    def prune(
        self, args: tuple[str, ...], view: RepoView, *, single: bool = False
    ) -> tuple[tuple[str, ...], PruneCheck | None]:
        """`args` with the exclusions that can match nothing left out (and the check to make after the run),
        or `args` unchanged and None when they do not end with the whole list or nothing is known.
        `single` (git --follow, one pathspec only): no exclusion is kept when none is needed."""
        count = len(self.tail)
        if not count or args[-count:] != self.tail:
            return args, None
        answer = self.names.found(None if single else SCAN_WAIT_S)  # --follow cannot run without the answer
        if answer is None:
            return args, None
        found = answer.needles | self._view_needles(view)
        foreign = self._foreign_exclusions(answer, view)
        kept = self._kept.get((found, foreign))
        if kept is None:
            kept = tuple(
                spec for spec, needles, non_ascii in zip(self.tail, self.needles, self._non_ascii, strict=True)
                if (foreign is None if non_ascii else needles is None or needles <= found)
            ) + (foreign or ())  # fmt: skip
            if len(self._kept) > 64:
                self._kept.clear()
            self._kept[found, foreign] = kept
        if not kept and not single:
            kept = self.tail[:1]
        return (*args[:-count], *kept), PruneCheck(answer.generation, view)

    def exclusions_left(self, planned: tuple[str, ...], args: tuple[str, ...]) -> bool:
        """Whether `args`, pruned from `planned` (which ends with the whole list), still excludes anything."""
        return len(args) > len(planned) - len(self.tail)

    def history_clean(self, view: RepoView) -> PruneCheck | None:
        """The check to make after the run when no exclusion can match a name in git's records (the index and
        every tree object); None when one can, or when nothing is known. For `git blame` (renames, copies)."""
        answer = self.names.found()
        if answer is None or answer.foreign is None or self.foreign.refused(answer.foreign):
            return None
        needed = (
            needles is None or needles <= answer.needles
            for needles, non_ascii in zip(self.needles, self._non_ascii, strict=True) if not non_ascii
        )  # fmt: skip
        return None if any(needed) else PruneCheck(answer.generation, view)

    def non_ascii_exclusions(self, view: RepoView) -> tuple[str, ...]:
        """The exclusions of the non-ASCII names the deny-list refuses among those git could show: exact ones
        when they are known, else the exclusion of every non-ASCII path. Blocking (may wait for a scan)."""
        answer = self.names.found()
        exact = None if answer is None else self._foreign_exclusions(answer, view)
        return NON_ASCII_EXCLUSIONS if exact is None else exact

    def unchanged(self, check: PruneCheck, views: ViewCache) -> bool:
        """Nothing the pruning was based on has changed since. Blocking (the view may be rescanned)."""
        return self.names.generation() == check.generation and views.current() is check.view

    def _foreign_exclusions(self, answer: Found, view: RepoView) -> tuple[str, ...] | None:
        """Exact exclusions of the refused non-ASCII names in git's records and among the working tree's
        hidden entries; None when they are not known or too many."""
        if answer.foreign is None or not self.tail:
            return None
        in_view: frozenset[bytes] | None = view.cache.get("git-foreign-names")
        if in_view is None:
            in_view = frozenset(foreign_components(os.fsencode(rel) for rel in view.invisible))
            view.cache["git-foreign-names"] = in_view
        return self.foreign.exclusions(answer.foreign, in_view)

    def _view_needles(self, view: RepoView) -> frozenset[bytes]:
        cached: frozenset[bytes] | None = view.cache.get("git-exclude-needles")
        if cached is None:
            search = NeedleSearch(self.names.needles)
            search.search(component_haystack(os.fsencode(rel) for rel in view.invisible if rel != ".git"))
            cached = frozenset(search.found)
            view.cache["git-exclude-needles"] = cached
        return cached
