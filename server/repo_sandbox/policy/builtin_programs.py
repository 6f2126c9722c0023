"""The built-in rules of the read-only programs (except git and find, which have their own modules).

Why each option is refused comes from research/sandbox-and-exec-policy.md (verified bypasses): WRITES,
EXECS, READS_OUTSIDE, FOLLOWS and BLOCKS name the effect. Every rule carries examples that must be allowed
or denied; `CommandPolicy.check_examples` runs them whenever a policy is built.
"""

from __future__ import annotations

import re
from typing import Final

from repo_sandbox.policy._argv import ParsedArgs, refuse, table
from repo_sandbox.policy.programs import BLOCKS, EXECS, FOLLOWS, READS_OUTSIDE, WRITES, ProgramSpec


def _jq_filter_check(parsed: ParsedArgs) -> None:
    text = parsed.operands[0] if parsed.operands else ""
    if re.search(r"\b(import|include)\b", text):
        raise refuse("jq", "import", "jq modules (import/include) are not allowed: they load files by search path.")


def _awk_program_check(parsed: ParsedArgs) -> None:
    text = parsed.operands[0] if parsed.operands else ""
    if re.search(r"@\s*(include|load|nsinclude)", text):
        raise refuse(
            "awk",
            "@include",
            "awk @include/@load are not allowed: gawk reads the named file as program text even in sandbox mode "
            "(a protected or outside file's lines show in its syntax errors).",
        )


_GREP_DENIED: Final = {
    "-f": READS_OUTSIDE,
    "--file": READS_OUTSIDE,
    "-R": FOLLOWS,
    "--dereference-recursive": FOLLOWS,
    "-d": "use -r to recurse",
    "--directories": "use -r to recurse",
    "-D": "it reads devices and FIFOs",
    "--devices": "it reads devices and FIFOs",
    "--exclude-from": READS_OUTSIDE,
    "-P": "Perl regexes can backtrack catastrophically; use -E",
    "--perl-regexp": "Perl regexes can backtrack catastrophically; use -E",
}

BUILTIN_SPECS: Final[tuple[ProgramSpec, ...]] = (
    ProgramSpec(
        "cat",
        table(
            "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number --squeeze-blank "
            "--show-tabs --show-nonprinting"
        ),
        summary="print files",
        allow_examples=("cat -n README.md", "cat -A src/a.py src/b.py"),
        deny_examples=("cat --show-al x",),
    ),
    ProgramSpec(
        "head",
        table("-q -v -z --quiet --silent --verbose --zero-terminated", "-n -c --lines --bytes", numeric=True),
        summary="first lines of files",
        allow_examples=("head -n 20 README.md", "head -20 a.txt", "head -c100 a.txt"),
        deny_examples=("head --line=5 a.txt",),
    ),
    ProgramSpec(
        "tail",
        table(
            "-q -v -z --quiet --silent --verbose --zero-terminated",
            "-n -c --lines --bytes",
            denied={
                "-f": BLOCKS,
                "-F": BLOCKS,
                "--follow": BLOCKS,
                "--pid": BLOCKS,
                "--retry": BLOCKS,
                "-s": BLOCKS,
                "--sleep-interval": BLOCKS,
            },
            numeric=True,
        ),
        summary="last lines of files (no follow mode)",
        allow_examples=("tail -n 50 build.log", "tail -5 a.txt", "tail -n +3 a.txt"),
        deny_examples=("tail -f build.log", "tail -qf a", "tail --follow=name a", "tail --foll a"),
    ),
    ProgramSpec(
        "wc",
        table(
            "-c -m -l -w -L --bytes --chars --lines --words --max-line-length",
            "--total",
            denied={"--files0-from": READS_OUTSIDE},
        ),
        summary="count lines, words, bytes",
        allow_examples=("wc -l README.md", "wc -lwc a b", "wc --total=only -l a"),
        deny_examples=("wc --files0-from=list", "wc --files0=list", "wc --files0-fr=x"),
    ),
    ProgramSpec(
        "ls",
        table(
            "-a -A -b -B -c -C -d -D -f -F -g -G -h -i -k -l -m -n -N -o -p -q -Q -r -R -s -S -t -u -U -v -x "
            "-X -Z -1 --all --almost-all --author --escape --ignore-backups --directory --dired --file-type "
            "--full-time --human-readable --si --inode --kibibytes --literal --numeric-uid-gid --no-group "
            "--hide-control-chars --show-control-chars --quote-name --recursive --reverse --size "
            "--group-directories-first --context --zero",
            "-w -T -I --width --tabsize --ignore --hide --sort --time --time-style --format --block-size "
            "--quoting-style --indicator-style",
            "--color --colour --hyperlink --classify",
            denied={
                "-L": FOLLOWS,
                "--dereference": FOLLOWS,
                "-H": FOLLOWS,
                "--dereference-command-line": FOLLOWS,
                "--dereference-command-line-symlink-to-dir": FOLLOWS,
            },
        ),
        summary="list directories",
        allow_examples=("ls -la", "ls -lR src", "ls --color=never -1 src", "ls -lhS"),
        deny_examples=("ls -L", "ls -lL src", "ls --dereference", "ls --deref", "ls -RL ."),
    ),
    ProgramSpec(
        "grep",
        table(
            "-E -F -G -i -y -v -w -x -c -L -l -o -q -s -b -H -h -n -T -Z -z -a -I -r -U --no-ignore-case "
            "--extended-regexp --fixed-strings --basic-regexp --ignore-case --invert-match --word-regexp "
            "--line-regexp --count --files-without-match --files-with-matches --only-matching --quiet --silent "
            "--no-messages --byte-offset --with-filename --no-filename --line-number --initial-tab --null "
            "--null-data --text --recursive --line-buffered --binary",
            "-e -m -A -B -C --regexp --max-count --after-context --before-context --context --include "
            "--exclude --exclude-dir --label --binary-files",
            "--color --colour",
            denied=_GREP_DENIED,
            numeric=True,
        ),
        operands="pattern+paths",
        pattern_options=frozenset({"-e", "--regexp"}),
        summary="search text (no -R, -f, -P)",
        allow_examples=("grep -rn TODO src", "grep -e foo -e bar a.txt", "grep -C2 -i 'x y' a", "grep -5 x a"),
        deny_examples=(
            "grep -f /etc/passwd a",
            "grep -R x .",
            "grep -rR x",
            "grep --dereference x .",
            "grep --file=p a",
            "grep --fil=p a",
            "grep -P 'a+' a",
            "grep --exclude-fr=x a .",
        ),
    ),
    ProgramSpec(
        "rg",
        table(
            "-i -s -S -F -w -x -v -c -l -n -N -H -o -b -U -u -a -q -0 -p --ignore-case --case-sensitive "
            "--smart-case --fixed-strings --word-regexp --line-regexp --invert-match --count --count-matches "
            "--files-with-matches --files-without-match --line-number --no-line-number --with-filename "
            "--no-filename --only-matching --column --no-column --byte-offset --heading --no-heading --vimgrep "
            "--json --multiline --multiline-dotall --hidden --no-ignore --no-ignore-vcs --no-ignore-parent "
            "--no-ignore-dot --files --type-list --text --stats --passthru --include-zero --no-messages "
            "--one-file-system --max-columns-preview --null --null-data --trim --pretty --quiet",
            "-t -T -g -e -m -A -B -C -d -M -j -r --type --type-not --glob --iglob --regexp --max-count "
            "--after-context --before-context --context --max-depth --max-filesize --sort --sortr --color "
            "--colors --max-columns --threads --replace",
            denied={
                "--pre": EXECS,
                "--pre-glob": EXECS,
                "--hostname-bin": EXECS,
                "-z": EXECS,
                "--search-zip": EXECS,
                "-L": FOLLOWS,
                "--follow": FOLLOWS,
                "-f": READS_OUTSIDE,
                "--file": READS_OUTSIDE,
                "--ignore-file": READS_OUTSIDE,
                "-P": "PCRE2 can backtrack catastrophically",
                "--pcre2": "PCRE2 can backtrack catastrophically",
                "--engine": "only the default regex engine is allowed",
                "--no-config": "it is always set",
            },
        ),
        operands="pattern+paths",
        pattern_options=frozenset({"-e", "--regexp"}),
        forced=("--no-config",),
        summary="ripgrep (forced --no-config; no --pre, -z, -L, -P)",
        allow_examples=("rg -n TODO src", "rg -l -t py import", "rg --json -e x ."),
        deny_examples=("rg --pre cat x", "rg --pre=cat x", "rg -z x", "rg -L x", "rg -P 'a+' .", "rg --pr=cat x"),
    ),
    ProgramSpec(
        "sed",
        table(
            "-n -E -r -s -z -u --quiet --silent --regexp-extended --separate --null-data --unbuffered --posix "
            "--debug --sandbox",
            "-e -l --expression --line-length",
            denied={
                "-i": WRITES,
                "--in-place": WRITES,
                "-f": READS_OUTSIDE,
                "--file": READS_OUTSIDE,
                "--follow-symlinks": FOLLOWS,
            },
        ),
        operands="pattern+paths",
        pattern_options=frozenset({"-e", "--expression"}),
        forced=("--sandbox",),
        summary="stream editor (forced --sandbox: no e, r, w commands; no -i)",
        allow_examples=("sed -n '1,20p' README.md", "sed -e s/a/b/ -e 3q a.txt", "sed -nE '/x/p' a"),
        deny_examples=(
            "sed -i s/a/b/ a.txt",
            "sed -ni s/a/b/ a",
            "sed --in-place s/a/b/ a",
            "sed --in-pl s/a/b/ a",
            "sed -f script a",
            "sed -n -f s a",
        ),
    ),
    ProgramSpec(
        "awk",
        table(
            "--sandbox --posix --traditional --characters-as-bytes --re-interval --lint --no-optimize --optimize",
            "-F -v --field-separator --assign",
            denied={
                "-f": "it loads program files",
                "--file": "it loads program files",
                "-i": "it loads files",
                "--include": "it loads files",
                "-l": "it loads shared libraries",
                "--load": "it loads shared libraries",
                "-E": "it loads program files",
                "--exec": "it loads program files",
                "-e": "use the program text operand",
                "--source": "use the program text operand",
                "-o": WRITES,
                "--pretty-print": WRITES,
                "-p": WRITES,
                "--profile": WRITES,
                "-d": WRITES,
                "--dump-variables": WRITES,
                "-D": "the debugger reads commands",
                "--debug": "the debugger reads commands",
            },
        ),
        operands="pattern+paths",
        extra_check=_awk_program_check,
        binary="gawk",
        forced=("--sandbox",),
        summary="gawk --sandbox (no system(), pipes or redirections; no -f, -o, -p, -d)",
        allow_examples=("awk '{print $1}' a.txt", "awk -F: -v n=2 '{print $n}' a", "awk -F , 'NR>1' x.csv"),
        deny_examples=("awk -f prog.awk a", "awk -o out '{print}' a", "awk --prof=x 1 a", "awk -d 1 a"),
    ),
    ProgramSpec(
        "sort",
        table(
            "-b -d -f -g -h -i -M -n -R -r -V -c -C -m -s -u -z --ignore-leading-blanks --dictionary-order "
            "--ignore-case --general-numeric-sort --human-numeric-sort --ignore-nonprinting --month-sort "
            "--numeric-sort --random-sort --reverse --version-sort --merge --stable --unique --zero-terminated "
            "--debug",
            "-k -t -S --key --field-separator --buffer-size --parallel --sort",
            "--check",
            denied={
                "-o": WRITES,
                "--output": WRITES,
                "-T": WRITES,
                "--temporary-directory": WRITES,
                "--compress-program": EXECS,
                "--random-source": READS_OUTSIDE,
                "--files0-from": READS_OUTSIDE,
            },
        ),
        summary="sort lines (no -o, -T, --compress-program)",
        allow_examples=("sort -u a.txt", "sort -t, -k2 -n a.csv", "sort -rn", "sort -k 1,1 a"),
        deny_examples=(
            "sort -o out a",
            "sort -uoout a",
            "sort --output=out a",
            "sort --outp=out a",
            "sort --compress-program=sh a",
            "sort --compress-prog=sh a",
            "sort -T /tmp a",
            "sort --files0-from=f",
        ),
    ),
    ProgramSpec(
        "uniq",
        table(
            "-c -d -D -u -i -z --count --repeated --unique --ignore-case --zero-terminated",
            "-f -s -w --skip-fields --skip-chars --check-chars",
            "--all-repeated --group",
        ),
        max_operands=1,
        summary="collapse repeated lines (one input operand; a second would be an output file)",
        allow_examples=("uniq -c", "uniq -c a.txt", "uniq -f1 -s2 a"),
        deny_examples=("uniq a.txt out.txt", "uniq -c a b"),
    ),
    ProgramSpec(
        "cut",
        table(
            "-n -s -z --complement --only-delimited --zero-terminated",
            "-b -c -f -d --bytes --characters --fields --delimiter --output-delimiter",
        ),
        summary="select columns",
        allow_examples=("cut -d: -f1 a.txt", "cut -c1-10", "cut -f 2 --output-delimiter=, a"),
        deny_examples=("cut --field=1 a",),
    ),
    ProgramSpec(
        "tr",
        table("-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1"),
        operands="strings",
        max_operands=2,
        summary="translate characters",
        allow_examples=("tr a-z A-Z", "tr -d '\\r'", "tr -s ' '"),
        deny_examples=("tr --del x",),
    ),
    ProgramSpec(
        "nl",
        table(
            "-p --no-renumber",
            "-b -d -f -h -i -l -n -s -v -w --body-numbering --section-delimiter "
            "--footer-numbering --header-numbering --line-increment --join-blank-lines --number-format "
            "--number-separator --starting-line-number --number-width",
        ),
        summary="number lines",
        allow_examples=("nl -ba a.txt", "nl -w 3 a"),
        deny_examples=("nl --body=a a",),
    ),
    ProgramSpec(
        "tac",
        table("-b -r --before --regex", "-s --separator"),
        summary="print files in reverse",
        allow_examples=("tac a.txt",),
        deny_examples=("tac --sep=x a",),
    ),
    ProgramSpec(
        "column",
        table(
            "-t -d -e -L -J -x --table --table-noheadings --table-header-repeat --keep-empty-lines --json --fillrows",
            "-n -O -N -l -E -H -R -T -W -r -i -p -c -o -s --table-name --table-order --table-columns "
            "--table-columns-limit --table-noextreme --table-hide --table-right --table-truncate --table-wrap "
            "--tree --tree-id --tree-parent --output-width --output-separator --separator",
        ),
        summary="format columns",
        allow_examples=("column -t", "column -t -s, a.csv"),
        deny_examples=("column --tab a",),
    ),
    ProgramSpec(
        "diff",
        table(
            "-q -s -c -u -e -n -y -p -t -T -r -N -a -b -w -B -E -Z -i -d --brief --report-identical-files --ed "
            "--normal --rcs --side-by-side --left-column --suppress-common-lines --show-c-function --expand-tabs "
            "--initial-tab --suppress-blank-empty --recursive --no-dereference --new-file "
            "--unidirectional-new-file --ignore-case --ignore-file-name-case --no-ignore-file-name-case "
            "--ignore-tab-expansion --ignore-trailing-space --ignore-space-change --ignore-all-space "
            "--ignore-blank-lines --text --strip-trailing-cr --minimal --speed-large-files",
            "-C -U -W -x -S -I -F -D --width --tabsize --exclude --starting-file --ignore-matching-lines "
            "--show-function-line --label --line-format --old-line-format --new-line-format "
            "--unchanged-line-format --old-group-format --new-group-format --changed-group-format "
            "--unchanged-group-format --horizon-lines --palette --ifdef --from-file --to-file",
            "--context --unified --color",
            denied={"-l": EXECS, "--paginate": EXECS, "-X": READS_OUTSIDE, "--exclude-from": READS_OUTSIDE},
        ),
        path_options=frozenset({"--from-file", "--to-file"}),
        forced=("--no-dereference",),  # diff -r would follow symlinks met on the way to anything mounted
        summary="compare files (operands jailed; forced --no-dereference: symlinks compared as links)",
        allow_examples=("diff -u a.txt b.txt", "diff -r src other", "diff --to-file=b a c"),
        deny_examples=(
            "diff -l a b",
            "diff --paginate a b",
            "diff -X list a b",
            "diff --exclude-fr=l a b",
            "diff --pag a b",
        ),
    ),
    ProgramSpec(
        "tree",
        table(
            "-a -d -f -i -x -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -C -n -J -X --si --du --noreport "
            "--dirsfirst --gitignore --prune --inodes --device",
            "-L -P -I --filelimit --charset --timefmt --sort",
            denied={"-o": WRITES, "-R": WRITES, "--fromfile": READS_OUTSIDE, "-l": FOLLOWS, "-H": WRITES},
        ),
        summary="directory tree (no -o, -R, -l)",
        allow_examples=("tree -L 2", "tree -a -I node_modules src"),
        deny_examples=("tree -o out", "tree -R", "tree -l", "tree --fromfile list"),
    ),
    ProgramSpec(
        "file",
        table(
            "-b -i -k -r -L -h -E -0 --brief --mime --mime-type --mime-encoding --keep-going --raw "
            "--dereference --no-dereference --extension --apple --print0 --no-pad --no-buffer",
            "-F -e -P --separator --exclude --parameter",
            denied={
                "-f": READS_OUTSIDE,
                "--files-from": READS_OUTSIDE,
                "-m": READS_OUTSIDE,
                "--magic-file": READS_OUTSIDE,
                "-C": WRITES,
                "--compile": WRITES,
                "-s": "it reads devices",
                "--special-files": "it reads devices",
                "-z": EXECS,
                "-Z": EXECS,
                "--uncompress": EXECS,
                "--uncompress-noreport": EXECS,
            },
        ),
        summary="guess file types",
        allow_examples=("file src/a.py", "file -b --mime-type a"),
        deny_examples=("file -f list", "file -m magic a", "file -z a.gz", "file -C"),
    ),
    ProgramSpec(
        "stat",
        table("-L -f -t --dereference --file-system --terse", "-c --format --printf", "--cached"),
        summary="file metadata",
        allow_examples=("stat a.txt", "stat -c '%s %n' a b"),
        deny_examples=("stat --form=%s a",),
    ),
    ProgramSpec(
        "du",
        table(
            "-a -b -c -h -k -l -m -s -S -x -0 --all --apparent-size --bytes --total --human-readable --si "
            "--inodes --count-links --separate-dirs --summarize --one-file-system --null",
            "-d -t -B --max-depth --threshold --block-size --exclude --time-style",
            "--time",
            denied={
                "-L": FOLLOWS,
                "--dereference": FOLLOWS,
                "-D": FOLLOWS,
                "-H": FOLLOWS,
                "--dereference-args": FOLLOWS,
                "-X": READS_OUTSIDE,
                "--exclude-from": READS_OUTSIDE,
                "--files0-from": READS_OUTSIDE,
            },
        ),
        summary="disk usage",
        allow_examples=("du -sh src", "du -d 1 -h ."),
        deny_examples=("du -L .", "du --files0-from=f", "du --deref .", "du -X f ."),
    ),
    ProgramSpec(
        "jq",
        table(
            "-r -j -c -n -s -e -S -C -M -a -R --raw-output --join-output --compact-output --null-input --slurp "
            "--exit-status --sort-keys --color-output --monochrome-output --ascii-output --raw-input --tab --seq "
            "--stream --unbuffered",
            "--indent",
            pairs="--arg --argjson",
            denied={
                "--rawfile": READS_OUTSIDE,
                "--slurpfile": READS_OUTSIDE,
                "--argfile": READS_OUTSIDE,
                "-L": "it loads modules",
                "-f": "it loads a program file",
                "--from-file": "it loads a program file",
                "--args": "positional strings are not supported",
                "--jsonargs": "positional JSON is not supported",
                "--run-tests": READS_OUTSIDE,
            },
        ),
        operands="pattern+paths",
        extra_check=_jq_filter_check,
        summary="JSON processor (no --rawfile, --slurpfile, -L, -f, modules)",
        allow_examples=(
            "jq . a.json",
            "jq -r '.name' package.json",
            "jq -c '.[] | .id' a.json",
            "jq --arg n v '.[$n]' a.json",
        ),
        deny_examples=(
            "jq --rawfile x /etc/passwd .",
            "jq -L lib .",
            "jq -f prog a",
            "jq 'import \"a\" as a; .' x",
            "jq --slurpfile x f .",
        ),
    ),
    ProgramSpec(
        "echo",
        table(),
        operands="strings",
        parse_options=False,
        summary="print its arguments",
        allow_examples=("echo hello", "echo -n -e 'a\\tb'"),
        deny_examples=(),
    ),
    ProgramSpec(
        "printf",
        table(),
        operands="strings",
        parse_options=False,
        summary="format its arguments",
        allow_examples=("printf '%s\\n' a b",),
        deny_examples=(),
    ),
    ProgramSpec(
        "basename",
        table("-a -z --multiple --zero", "-s --suffix"),
        operands="strings",
        summary="strip directories from names",
        allow_examples=("basename src/a.py .py",),
        deny_examples=("basename --suf=.py a",),
    ),
    ProgramSpec(
        "dirname",
        table("-z --zero"),
        operands="strings",
        summary="directory part of names",
        allow_examples=("dirname src/a.py",),
        deny_examples=("dirname --ze a",),
    ),
    ProgramSpec(
        "realpath",
        table(
            "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical --physical --quiet "
            "--strip --no-symlinks --zero",
            "--relative-to --relative-base",
        ),
        path_options=frozenset({"--relative-to", "--relative-base"}),
        summary="resolve paths (operands must stay inside)",
        allow_examples=("realpath src/a.py", "realpath --relative-to=src a"),
        deny_examples=("realpath --relative=src a",),
    ),
    ProgramSpec(
        "pwd",
        table("-L -P"),
        operands="none",
        summary="print the working directory",
        allow_examples=("pwd",),
        deny_examples=("pwd x",),
    ),
    ProgramSpec(
        "true",
        table(),
        operands="strings",
        parse_options=False,
        summary="do nothing, successfully",
        allow_examples=("true",),
        deny_examples=(),
    ),
    ProgramSpec(
        "false",
        table(),
        operands="strings",
        parse_options=False,
        summary="do nothing, unsuccessfully",
        allow_examples=("false",),
        deny_examples=(),
    ),
)
"""Every built-in rule except git and find, which have their own modules."""
