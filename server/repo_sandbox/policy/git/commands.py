"""The git sub-commands execute_bash may run: each one's exact option allow-list, forced flags, operand kinds
and checks, and the sub-commands refused with their reasons. Judged by `policy.git.rule.GitRule`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from repo_sandbox.policy._argv import OptionTable, ParsedArgs, refuse, table
from repo_sandbox.policy.programs import EXECS, READS_OUTSIDE, WRITES

_DIFF_FLAGS: Final = (
    "-p -u -s -R -a -w -b -W -D -z --patch --no-patch --raw --patch-with-raw --patch-with-stat --numstat "
    "--shortstat --summary --name-only --name-status --compact-summary --full-index --binary --no-abbrev --text "
    "--ignore-all-space --ignore-space-change --ignore-space-at-eol --ignore-blank-lines --ignore-cr-at-eol "
    "--minimal --patience --histogram --no-renames --find-copies-harder --irreversible-delete --function-context "
    "--exit-code --quiet --no-color --no-color-moved --check --no-relative --no-prefix --default-prefix "
    "--cumulative --pickaxe-regex --indent-heuristic --no-indent-heuristic --no-ext-diff "
    "--no-textconv --ita-invisible-in-index"
)
_DIFF_VALUES: Final = (
    "-U -S -G -l --unified --word-diff-regex --ws-error-highlight --src-prefix --dst-prefix --line-prefix "
    "--stat-width --stat-name-width --stat-count --stat-graph-width --diff-filter --find-object --anchored "
    "--diff-algorithm --inter-hunk-context --output-indicator-new --output-indicator-old "
    "--output-indicator-context --skip-to --rotate-to"
)
_DIFF_OPTIONAL: Final = (
    "-M -C -B --abbrev --color --color-words --word-diff --color-moved --relative --stat --dirstat "
    "--dirstat-by-file --find-renames --find-copies --break-rewrites --ignore-submodules --submodule"
)
_DIFF_DENIED: Final = {
    "--output": WRITES,
    "--ext-diff": EXECS,
    "--textconv": EXECS,
    "--no-index": "it compares files outside the repository",
    "-O": READS_OUTSIDE,
    "--pickaxe-all": "it shows the whole change set, past the exclusions that hide protected files",
}
_REV_FLAGS: Final = (
    "-i -E -F -g -c -m --all-match --invert-grep --regexp-ignore-case --basic-regexp --extended-regexp "
    "--fixed-strings --remove-empty --merges --no-merges --no-min-parents --no-max-parents --first-parent "
    "--exclude-first-parent-only --not --all --single-worktree --ignore-missing --cherry-mark "
    "--cherry-pick --left-only --right-only --cherry --walk-reflogs --merge --boundary "
    "--simplify-by-decoration --show-pulls --full-history --dense --sparse --simplify-merges --date-order "
    "--author-date-order --topo-order --reverse --do-walk --abbrev-commit --no-abbrev-commit --oneline "
    "--no-expand-tabs --no-notes --relative-date --parents --children --left-right --graph --cc --dd "
    "--no-diff-merges --combined-all-paths --no-decorate --source --clear-decorations --use-mailmap "
    "--no-use-mailmap --mailmap --no-mailmap --log-size --follow --count"
)
_REV_VALUES: Final = (
    "-n --max-count --skip --since --after --until --before --max-age --min-age --author --committer --grep "
    "--min-parents --max-parents --glob --exclude --format --encoding --date --diff-merges --decorate-refs "
    "--decorate-refs-exclude --since-as-filter"
)
_REV_OPTIONAL: Final = (
    "--branches --tags --remotes --ancestry-path --no-walk --pretty --expand-tabs --show-linear-break --decorate"
)
_REV_DENIED: Final = {
    "--show-signature": "it runs gpg",
    "--alternate-refs": EXECS,
    "-L": "line-range history reads files; use git blame -L",
    "--stdin": "standard input is empty",
    "-P": "Perl regexes can backtrack catastrophically",
    "--perl-regexp": "Perl regexes can backtrack catastrophically",
    "--bisect": "bisect state is not available",
    "--full-diff": "it shows the whole change set, past the exclusions that hide protected files",
    "--objects": "it lists directories the deny-list hides (git applies exclusions to files only)",
    "--notes": "a note can be any blob, a protected file's included",
    "--show-notes": "a note can be any blob, a protected file's included",
    "--standard-notes": "a note can be any blob, a protected file's included",
    "--reflog": "it walks the reflogs of notes and replace refs too; name refs with -g",
}


def _join(*parts: str) -> str:
    return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Subcommand:
    name: str
    options: OptionTable
    forced: tuple[str, ...] = ()
    operands: str = "revs+paths"
    """revs+paths | pattern+revs+paths (grep) | paths (blame file) | names (branch/tag patterns) | none."""
    excludes: bool = False
    """Append the deny-list as exclude pathspecs."""
    check: Callable[[ParsedArgs], None] | None = None


def _log_options(extra_flags: str = "", extra_values: str = "", extra_optional: str = "") -> OptionTable:
    return table(
        _join(_DIFF_FLAGS, _REV_FLAGS, extra_flags),
        _join(_DIFF_VALUES, _REV_VALUES, extra_values),
        _join(_DIFF_OPTIONAL, _REV_OPTIONAL, extra_optional),
        denied={**_DIFF_DENIED, **_REV_DENIED},
        numeric=True,
    )


def _listing_only(command: str) -> Callable[[ParsedArgs], None]:
    def check(parsed: ParsedArgs) -> None:
        if parsed.operands and not parsed.has("-l", "--list"):
            raise refuse(
                "git",
                f"{command} {parsed.operands[0]}",
                f"git {command} with a name would create or change a {command}; use --list to filter.",
                rule=f"git {command}: listing only",
            )

    return check


def _no_raw_format(parsed: ParsedArgs) -> None:
    for value in parsed.values_of("--format"):
        if re.search(r"%\(\*?raw", value):
            raise refuse("git", "--format", "the %(raw) atom prints an object's content.", rule="git: formats")
    for value in parsed.values_of("--sort"):
        if re.match(r"-?\*?raw", value):
            reason = "sorting by raw orders refs by their objects' content (a tag of a protected file included)."
            raise refuse("git", "--sort", reason, rule="git: formats")


def _tag_or_branch_check(command: str) -> Callable[[ParsedArgs], None]:
    listing = _listing_only(command)

    def check(parsed: ParsedArgs) -> None:
        listing(parsed)
        _no_raw_format(parsed)

    return check


_REF_LISTS: Final = ("--all", "--branches", "--tags", "--remotes", "--glob", "--reflog")


def _show_check(parsed: ParsedArgs) -> None:
    for name, _ in parsed.options:
        if name in _REF_LISTS:
            reason = f"git show {name} shows every object a ref names, tags of files included; name the commits."
            raise refuse("git", name, reason, rule="git show: objects")


def check_submodule_options(parsed: ParsedArgs) -> None:
    """`--submodule=diff` and `--ignore-submodules=none|untracked` (which outvotes the forced `dirty`) make git
    start git inside a submodule."""
    for name, value in parsed.options:
        if (name, value) == ("--submodule", "diff") or (
            name == "--ignore-submodules" and value in ("none", "untracked")
        ):
            raise refuse("git", f"{name}={value}", f"git {name}={value} is not allowed: {_SUBMODULE_GIT}.",
                         rule="git: submodules")  # fmt: skip


def _cat_file_check(parsed: ParsedArgs) -> None:
    modes = [name for name, _ in parsed.options if name in ("-p", "-t", "-s", "-e")]
    if len(modes) != 1 or len(parsed.operands) != 1:
        raise refuse("git", "cat-file", "git cat-file needs exactly one of -p, -t, -s, -e and one object.")


REVISION_VALUES: Final = (
    "--default", "--find-object", "--ancestry-path", "--ignore-rev", "--reverse", "--with-tree", "--points-at",
    "--contains", "--no-contains", "--merged", "--no-merged",
)  # fmt: skip
"""Options whose value git resolves as a revision: `REV:path` in them obeys the deny-list like an operand
(`rev-parse --default HEAD:.env` printed the object id; git's errors tell whether a protected path exists)."""

_SUBMODULE_GIT: Final = (
    "it runs git inside a submodule under the submodule's own configuration, which can name programs"
)
_DIFF_FORCED: Final = ("--no-ext-diff", "--no-textconv")
_WORKTREE_FORCED: Final = ("--ignore-submodules=dirty",)
"""Comparing a checked-out submodule's files runs `git status` inside it (`_SUBMODULE_GIT`); its new commits
still show."""
_LOG_FORCED: Final = (*_DIFF_FORCED, "--no-notes")
"""Notes are shown by default and can be any blob (`git notes add -C <blob of .env>`)."""
SUBCOMMANDS: Final[dict[str, Subcommand]] = {
    sub.name: sub
    for sub in (
        Subcommand("log", _log_options(), _LOG_FORCED, excludes=True),
        Subcommand("show", _log_options(), _LOG_FORCED, excludes=True, check=_show_check),
        Subcommand(
            "diff",
            _log_options("--cached --staged --merge-base -1 -2 -3 --base --ours --theirs"),
            (*_DIFF_FORCED, *_WORKTREE_FORCED),
            excludes=True,
        ),
        Subcommand(
            "shortlog",
            _log_options("-s -e -w --summary --numbered --email --committer", "--group"),
            ("--no-notes",),
            excludes=True,
        ),
        Subcommand(
            "rev-list",
            _log_options("--timestamp --header --no-object-names --in-commit-order"),
            ("--no-notes",),
            excludes=True,
        ),
        Subcommand(
            "status",
            table(
                "-s -b -z --short --branch --show-stash --ahead-behind --no-ahead-behind --long "
                "--null --no-renames --renames --no-column",
                optional="-u -M --porcelain --untracked-files --ignored --ignore-submodules --column --find-renames",
                denied={
                    "-v": "its diff ignores pathspecs, so it shows protected staged files; use git diff --cached",
                    "--verbose": "its diff ignores pathspecs, so it shows protected staged files; use git diff --cached",
                },
            ),
            _WORKTREE_FORCED,
            operands="paths",
            excludes=True,
        ),
        Subcommand(
            "blame",
            table(
                "-b -f -n -p -c -t -l -s -e -w --root --show-stats --show-name --show-number --porcelain "
                "--line-porcelain --incremental --show-email --minimal --color-lines --color-by-age "
                "--score-debug --first-parent --no-textconv",
                "-L --ignore-rev --date --encoding --reverse",
                "-C -M --abbrev",
                denied={
                    "--contents": READS_OUTSIDE,
                    "-S": READS_OUTSIDE,
                    "--ignore-revs-file": READS_OUTSIDE,
                    "--textconv": EXECS,
                },
            ),
            ("--no-textconv",),
        ),
        Subcommand(
            "grep",
            table(
                "-i -I -w -v -h -H -E -G -F -n -l -L -z -o -c -p -W -q -r -a --ignore-case --word-regexp "
                "--invert-match --full-name --extended-regexp --basic-regexp --fixed-strings --line-number "
                "--column --files-with-matches --name-only --files-without-match --null --only-matching --count "
                "--no-color --break --heading --show-function --function-context --and --or --not --all-match "
                "--quiet --cached --untracked --recursive --no-recursive --exclude-standard "
                "--no-exclude-standard --text --no-textconv --recurse-submodules",
                "-e -A -B -C -m --context --after-context --before-context --threads --max-depth --max-count",
                "--color",
                denied={
                    "-O": EXECS,
                    "--open-files-in-pager": EXECS,
                    "-f": READS_OUTSIDE,
                    "--no-index": "it searches outside git's view",
                    "--textconv": EXECS,
                    "-P": "Perl regexes can backtrack catastrophically",
                    "--perl-regexp": "Perl regexes can backtrack catastrophically",
                },
                numeric=True,
            ),
            ("--no-textconv",),
            operands="pattern+revs+paths",
            excludes=True,
        ),
        Subcommand(
            "ls-files",
            table(
                "-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others --ignored --stage "
                "--unmerged --killed --directory --no-empty-directory --eol --full-name --recurse-submodules "
                "--debug --deduplicate --exclude-standard --error-unmatch --sparse",
                "-x --exclude --exclude-per-directory --with-tree --format",
                "--abbrev",
                denied={"-X": READS_OUTSIDE, "--exclude-from": READS_OUTSIDE},
            ),
            operands="paths",
            excludes=True,
        ),
        Subcommand(
            "rev-parse",
            table(
                "-q --verify --quiet --symbolic --symbolic-full-name --show-toplevel --show-prefix --show-cdup "
                "--git-dir --absolute-git-dir --git-common-dir --is-inside-work-tree --is-inside-git-dir "
                "--is-bare-repository --is-shallow-repository --all --revs-only --no-revs --flags --no-flags "
                "--sq --not --local-env-vars --show-ref-format",
                "--glob --since --after --until --before --default --git-path --path-format --prefix",
                "--abbrev-ref --short --branches --tags --remotes --show-object-format",
                denied={
                    "--resolve-git-dir": READS_OUTSIDE,
                    "--parseopt": "it reads standard input",
                    "--sq-quote": "not needed",
                },
            ),
        ),
        Subcommand(
            "describe",
            table(
                "--all --tags --contains --exact-match --debug --long --always --first-parent",
                "--abbrev --candidates --match --exclude",
                denied={"--dirty": _SUBMODULE_GIT, "--broken": _SUBMODULE_GIT},
            ),
        ),
        Subcommand(
            "show-ref",
            table(
                "-d -s -q --head --tags --branches --heads --dereference --verify --quiet --exists",
                optional="--hash --abbrev",
                denied={"--exclude-existing": "it reads standard input"},
            ),
        ),
        Subcommand("merge-base", table("-a --all --octopus --independent --is-ancestor --fork-point")),
        Subcommand("name-rev", table("--tags --all --name-only --no-undefined --always", "--refs --exclude")),
        Subcommand("count-objects", table("-v -H --verbose --human-readable"), operands="none"),
        Subcommand(
            "branch",
            table(
                "-l -a -r -v -i --list --all --remotes --verbose --no-color --show-current --no-abbrev "
                "--ignore-case --omit-empty --no-column",
                "--points-at --sort --format --abbrev",
                "--color --contains --no-contains --merged --no-merged --column",
            ),
            operands="names",
            check=_tag_or_branch_check("branch"),
        ),
        Subcommand(
            "tag",
            table(
                "-l -i --list --ignore-case --omit-empty --no-column",
                "--sort --format",
                "-n --contains --no-contains --merged --no-merged --points-at --color --column",
                denied={"-v": "it runs gpg", "--verify": "it runs gpg"},
            ),
            operands="names",
            check=_tag_or_branch_check("tag"),
        ),
        Subcommand(
            "cat-file",
            table(
                "-p -t -s -e --allow-unknown-type",
                denied={
                    "--filters": EXECS,
                    "--textconv": EXECS,
                    "--batch": "use -p",
                    "--batch-check": "use -t",
                    "--batch-command": "use -p",
                },
            ),
            check=_cat_file_check,
        ),
        Subcommand(
            "stash list",
            table(
                "--oneline --abbrev-commit --no-abbrev-commit --relative-date --reverse",
                "-n --max-count --format --date --skip --since --until --grep --author",
                "--pretty --decorate",
                numeric=True,
            ),
            ("--no-notes",),
            operands="none",
        ),
    )
}

DENIED_SUBCOMMANDS: Final = {
    "config": "it reads and writes configuration files (e.g. --file outside the repository)",
    "clone": "network access",
    "fetch": "network access",
    "pull": "network access",
    "push": "network access",
    "ls-remote": "network access",
    "submodule": "network access and writes",
    "remote": "network configuration",
    "archive": "it can run remote commands and write files",
    "format-patch": WRITES,
    "am": WRITES,
    "apply": WRITES,
    "difftool": EXECS,
    "mergetool": EXECS,
    "bisect": WRITES,
    "rebase": WRITES,
    "filter-branch": EXECS,
    "send-email": "network access",
    "help": "it runs a pager or browser",
    "gc": WRITES,
    "maintenance": WRITES,
    "ls-tree": "it lists files hidden by the deny-list; use git ls-files",
    "commit": WRITES,
    "add": WRITES,
    "rm": WRITES,
    "mv": WRITES,
    "checkout": WRITES,
    "switch": WRITES,
    "restore": WRITES,
    "reset": WRITES,
    "merge": WRITES,
    "cherry-pick": WRITES,
    "revert": WRITES,
    "init": WRITES,
    "worktree": WRITES,
    "notes": WRITES,
    "replace": WRITES,
    "update-ref": WRITES,
    "update-index": WRITES,
    "hook": EXECS,
    "var": "it reveals configured programs",
    "daemon": "network access",
    "instaweb": "network access",
    "web--browse": EXECS,
    "upload-pack": EXECS,
    "receive-pack": EXECS,
}
