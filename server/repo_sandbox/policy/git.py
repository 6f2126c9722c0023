"""The rule for `git`: read-only sub-commands, exact option allow-lists, jailed paths, forced hardening.

- Global options are all refused (`-c k=v` aliases, `-C`, `--git-dir`, `--work-tree`, `--exec-path`,
  `-p`, `--config-env`, `--namespace`, ...). Only listed sub-commands run, so aliases are never resolved.
- Options are exact names (git's parse-options accepts abbreviations: `git grep --open-files-in=true`).
- `--no-ext-diff --no-textconv` are forced where diffs are made; the environment half of the hardening
  (`GIT_CONFIG_*` overrides neutralising `.git/config`) lives in `exec.gitenv`.
- Every operand is jail-checked: revisions like `HEAD:path` have their path checked against the deny-list,
  anything path-like must stay inside (this also refuses the implicit `--no-index` of `git diff /dev/null F`).
- Sub-commands that print file names or contents get the deny-list appended as exclude pathspecs, so a denied
  file tracked by git stays hidden from `git log -p`, `git grep`, `git ls-files`, ... `--follow` allows one
  pathspec only: it runs when no exclusion can match anything in the repository (`exec.gitexcludes`).
- Objects named without a path (`git show <blob id>`, `HEAD^{tree}`, a tag of a blob, a subtree) are
  resolved before the command runs and must be commits, or files as `REV:path` (`policy.gitrevs`). `show` takes no ref-listing options (`--all`, `--tags`, ... reach tags of blobs), and
  `branch`/`tag --format` no `%(raw)` (an object's content). `describe` takes commits only (it names the path
  of a blob). Option values that are revisions (`--default`, `--find-object`, ...) are checked like operands.
- Options that print past the pathspecs are refused (`--full-diff`, `--pickaxe-all`, `status -v`); `blame`,
  which follows renames and names each line's source file, runs only where no commit it may walk deletes a
  protected path (with `-C`: only while git's records hold no protected name at all): `exec.gitblame`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from repo_sandbox.policy._argv import OptionTable, ParsedArgs, parse_args, refuse, table
from repo_sandbox.policy.gitrevs import RESOLVING, object_checks, split_revision
from repo_sandbox.policy.programs import (
    EXECS,
    READS_OUTSIDE,
    WRITES,
    ObjectCheck,
    PathChecker,
    RenameFollowing,
    StagePlan,
)

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
    "--exclude-first-parent-only --not --all --reflog --single-worktree --ignore-missing --cherry-mark "
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
    "--branches --tags --remotes --ancestry-path --no-walk --pretty --expand-tabs --notes --show-linear-break "
    "--decorate"
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


def _cat_file_check(parsed: ParsedArgs) -> None:
    modes = [name for name, _ in parsed.options if name in ("-p", "-t", "-s", "-e")]
    if len(modes) != 1 or len(parsed.operands) != 1:
        raise refuse("git", "cat-file", "git cat-file needs exactly one of -p, -t, -s, -e and one object.")


_REVISION_VALUES: Final = (
    "--default", "--find-object", "--ancestry-path", "--ignore-rev", "--reverse", "--with-tree", "--points-at",
    "--contains", "--no-contains", "--merged", "--no-merged",
)  # fmt: skip
"""Options whose value git resolves as a revision: `REV:path` in them obeys the deny-list like an operand
(`rev-parse --default HEAD:.env` printed the object id; git's errors tell whether a protected path exists)."""

_DIFF_FORCED: Final = ("--no-ext-diff", "--no-textconv")
SUBCOMMANDS: Final[dict[str, Subcommand]] = {
    sub.name: sub
    for sub in (
        Subcommand("log", _log_options(), _DIFF_FORCED, excludes=True),
        Subcommand("show", _log_options(), _DIFF_FORCED, excludes=True, check=_show_check),
        Subcommand(
            "diff",
            _log_options("--cached --staged --merge-base -1 -2 -3 --base --ours --theirs"),
            _DIFF_FORCED,
            excludes=True,
        ),
        Subcommand(
            "shortlog", _log_options("-s -e -w --summary --numbered --email --committer", "--group"), excludes=True
        ),
        Subcommand("rev-list", _log_options("--timestamp --header --no-object-names --in-commit-order"), excludes=True),
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
                "--dirty --broken",
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
        base = _ascii_glob(pattern if anchored else f"**/{pattern}")
        if not directory_only:
            specs.append(f":(exclude,glob,icase,top){base}")
        specs.append(f":(exclude,glob,icase,top){base}/**")
    return tuple(specs)


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
        objects = self._check_operands(sub, parsed, paths)
        head = tuple(name.split())
        tail: tuple[str, ...] = ()
        if _two_files(sub, parsed):
            objects = tuple(replace(check, must_exist=True) for check in objects)
        elif sub.excludes:
            tail = exclusion_pathspecs(self.deny_patterns)
        return StagePlan(
            "git", "git", (*head, *sub.forced, *rest, *tail), needs_git_dir=True,
            objects=objects, single_pathspec=bool(tail) and parsed.has("--follow"),
            follows_renames=_blame_walk(parsed) if name == "blame" else None,
        )  # fmt: skip

    @staticmethod
    def _check_operands(sub: Subcommand, parsed: ParsedArgs, paths: PathChecker) -> tuple[ObjectCheck, ...]:
        """Jail-checks every path; returns what the objects named by revisions must be."""
        resolves = sub.name in RESOLVING and (sub.name != "cat-file" or parsed.has("-p"))
        for value in parsed.values_of(*_REVISION_VALUES):
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
                    paths.pathspec(path, from_top=from_top)
                continue
            _check_revision(operand, paths)
            if resolves and not operand.startswith(":("):
                objects.extend(object_checks(operand, sub.name))
        return tuple(objects)


def _blame_walk(parsed: ParsedArgs) -> RenameFollowing:
    before = len(parsed.operands) - len(parsed.after_double_dash)
    # --reverse follows lines forward, to where a rename *adds* a path: any protected name could be one
    return RenameFollowing(tuple(parsed.operands[:before]), copies=parsed.has("-C", "--reverse"))


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
            paths.pathspec(path, from_top=from_top)
        return
    if operand.startswith(":/"):
        if operand[2:]:  # a search of commit messages, or (when none matches) a pathspec from the top
            paths.pathspec(operand[2:], from_top=True)
        return
    split = split_revision(operand)
    if split is None:
        paths.pathspec(operand, from_top=False)
        return
    path = split[1]
    if path.startswith(("./", "../")):
        paths.pathspec(path, from_top=False)
    elif path:
        paths.pathspec(path, from_top=True)
