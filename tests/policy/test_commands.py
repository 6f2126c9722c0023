"""Command policy: exact-name option allowlists, forced flags, operand jail, strictest decision, rule examples."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from repo_sandbox.config.loader import ConfigError, load_settings
from repo_sandbox.errors import SandboxError
from repo_sandbox.policy.commands import CommandPolicy, PolicyExampleError
from repo_sandbox.policy.decision import Decision, Verdict, strictest
from repo_sandbox.policy.deny import DEFAULT_DENY, DenyList
from repo_sandbox.policy.exec_model import ExecConfig
from repo_sandbox.policy.git.refs import NOTE_EXCLUSIONS, REF_EXCLUSIONS
from repo_sandbox.policy.git.rule import exclusion_pathspecs
from repo_sandbox.policy.operands import LexicalPaths
from repo_sandbox.policy.programs import ProgramSpec
from repo_sandbox.shell.parse import parse_command

PATHS = LexicalPaths(DenyList(DEFAULT_DENY))


def policy(**config: object) -> CommandPolicy:
    return CommandPolicy.from_config(ExecConfig.model_validate(config), DEFAULT_DENY)


def evaluate(command: str, p: CommandPolicy | None = None) -> list[list[str]]:
    stages = [(s.program, [w.text for w in s.args]) for s in parse_command(command).pipelines[0].stages]
    evaluation = (p or policy()).evaluate(stages, PATHS)
    return [[plan.binary, *plan.args] for plan in evaluation.plans]


def refusal(command: str, p: CommandPolicy | None = None) -> SandboxError:
    with pytest.raises(SandboxError) as info:
        evaluate(command, p)
    return info.value


# -- forced flags and what actually runs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("sed -n 1p a", [["sed", "--sandbox", "-n", "1p", "a"]]),
        ("awk '{print $1}' a", [["gawk", "--sandbox", "{print $1}", "a"]]),
        ("gawk 1 a", [["gawk", "--sandbox", "1", "a"]]),
        ("rg -n x", [["rg", "--no-config", "-n", "x"]]),
        ("cat -n a | sort -u", [["cat", "-n", "a"], ["sort", "-u"]]),
        ("echo -x --anything", [["echo", "-x", "--anything"]]),
    ],
)
def test_forced_safety_flags_are_inserted(command: str, expected: list[list[str]]) -> None:
    assert evaluate(command) == expected


def test_git_gets_hardening_flags_and_deny_list_exclusions() -> None:
    ((binary, *args),) = evaluate("git log -p -5")
    assert binary == "git"
    assert args[:4] == ["log", "--no-ext-diff", "--no-textconv", "--no-notes"]
    assert args[4:6] == ["-p", "-5"]
    assert ":(exclude,glob,icase,top)**/.env*" in args
    ((_, *blame),) = evaluate("git blame README.md")
    assert blame == ["blame", "--no-textconv", "README.md"]


def test_git_excludes_the_files_of_notes_trees_but_takes_commit_ids() -> None:
    """A notes tree names its files after commit ids: excluded wherever files print, refused as paths; an
    id is still a revision (blame's first operand too). --follow takes one pathspec: not these."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    ((_, *args),) = evaluate(f"git log -p {commit}")
    assert (
        commit in args
        and NOTE_EXCLUSIONS[0] in args
        and args[-len(exclusion_pathspecs(DEFAULT_DENY)) - 1].startswith(":(exclude,glob,icase,top)**/[0-9a-f]")
    )
    ((_, *blame),) = evaluate(f"git blame {commit} -- README.md")
    assert blame == ["blame", "--no-textconv", commit, "--", "README.md"]
    ((_, *follow),) = evaluate("git log --follow -- src/a.py")
    assert not set(NOTE_EXCLUSIONS) & set(follow)
    for command in (f"git show HEAD:{commit}", f"git log -- ab/{commit[2:]}", f"git blame HEAD {commit}", f"git blame {commit} HEAD",
                    f"git cat-file -p HEAD:x/{commit[:36]}", f"git ls-files {commit}"):  # fmt: skip
        assert refusal(command).code == "argument_not_allowed", command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git log --all", ["log", "--no-ext-diff", "--no-textconv", "--no-notes", *REF_EXCLUSIONS, "--all"]),
        ("git rev-parse --glob=x --all", ["rev-parse", *REF_EXCLUSIONS, "--glob=x", *REF_EXCLUSIONS, "--all"]),
        ("git rev-list --grep --all --tags", ["rev-list", "--no-notes", "--grep", "--all", *REF_EXCLUSIONS, "--tags"]),
        ("git branch --all", ["branch", "--all"]),  # a listing of branches, no walk: takes no --exclude
        ("git merge-base --all HEAD HEAD~1", ["merge-base", "--all", "HEAD", "HEAD~1"]),
        ("git describe --all", ["describe", "--all"]),
        ("git name-rev --all", ["name-rev", "--all"]),
        ("git show-ref --tags", ["show-ref", "--tags"]),
    ],
)
def test_ref_lists_of_revision_walks_skip_notes_and_replace_refs(command: str, expected: list[str]) -> None:
    ((_, *args),) = evaluate(command)
    assert args[: len(expected)] == expected


def test_git_follow_gets_the_exclusions_and_is_marked_single_pathspec() -> None:
    """The exec layer drops them when none can match, and refuses the command otherwise."""
    ((_, *args),) = evaluate("git log --follow -- src/a.py")
    assert args[args.index("--") + 1] == "src/a.py"
    assert ":(exclude,glob,icase,top)**/.env*" in args


def test_exclusion_pathspecs_translate_gitignore_patterns() -> None:
    assert exclusion_pathspecs([".env*", "config/", "/top.key", "!keep", "#c"]) == (
        ":(exclude,glob,icase,top)**/.env*",
        ":(exclude,glob,icase,top)**/.env*/**",
        ":(exclude,glob,icase,top)**/config/**",
        ":(exclude,glob,icase,top)**/config[. ]*/**",  # 'config./' is the same name to the deny-list
        ":(exclude,glob,icase,top)top.key",
        ":(exclude,glob,icase,top)top.key/**",
        ":(exclude,glob,icase,top)top.key[. ]*",
        ":(exclude,glob,icase,top)top.key[. ]*/**",
        ":(exclude,glob,top)**/*[!\x01-\x7f]*",  # every non-ASCII name, until exec.git.excludes knows them
        ":(exclude,glob,top)**/*[!\x01-\x7f]*/**",
    )
    assert exclusion_pathspecs(["!keep", "# only a comment"]) == ()


@pytest.mark.parametrize(
    ("rule", "bodies"),
    [
        # every name of a rule takes trailing dots or spaces, in every combination ('.docker./config.json')
        ("**/.docker/config.json", ["**/.docker/config.json", "**/.docker[. ]*/config.json",
                                    "**/.docker/config.json[. ]*", "**/.docker[. ]*/config.json[. ]*"]),
        ("ops/**/t.txt", ["ops/**/t.txt", "ops[. ]*/**/t.txt", "ops/**/t.txt[. ]*", "ops[. ]*/**/t.txt[. ]*"]),
        ("k/*.key", ["k/*.key", "k[. ]*/*.key", "k/*.key[. ]*", "k[. ]*/*.key[. ]*"]),
        ("id_rsa*", ["**/id_rsa*"]),  # a name ending in '*' already takes them
        ("dir\\*/k", ["dir\\*/k", "dir\\*[. ]*/k", "dir\\*/k[. ]*", "dir\\*[. ]*/k[. ]*"]),  # an escaped '*' does not
        # past three names, all but the last widen to 'name*' instead of doubling again
        ("a/b/c/d.txt", ["a*/b*/c*/d.txt", "a*/b*/c*/d.txt[. ]*"]),
    ],
)  # fmt: skip
def test_exclusions_take_trailing_dots_and_spaces_on_every_name(rule: str, bodies: list[str]) -> None:
    magic = ":(exclude,glob,icase,top)"
    expected = [spec for body in bodies for spec in (f"{magic}{body}", f"{magic}{body}/**")]
    assert list(exclusion_pathspecs([rule])[:-2]) == expected


# -- getopt-style parsing: bundles, attached values, abbreviations ----------------------------------------

ALLOWED = [
    "head -n5 a",
    "head -20 a",
    "tail -n +3 a",
    "sort -rnk2 a",
    "sort -t, -k 2,2 a",
    "grep -rniC2 TODO src",
    "grep -e a -e b -- -x",
    "ls -la --color=never",
    "ls --color",
    "cut -d: -f1 a",
    "uniq -c",
    "jq --arg n v '.[$n]' a.json",
    "diff -u a b",
    "wc -l -- -odd-name",
    "find . -maxdepth 2 -type f -name '*.py' -newer a -printf '%p\\n'",
    "git log --oneline --graph --decorate=short -n 3 main..HEAD -- src",
    "git diff --stat=100 -M50% HEAD~1",
    "git grep -n -e foo --and -e bar HEAD -- src",
    "git show HEAD:src/a.py",
    "git branch --list 'feat*'",
    "git tag -l 'v*'",
    "git status -sb",
    "git stash list --oneline",
    "git cat-file -p HEAD",
    "git rev-parse --abbrev-ref HEAD",
]


@pytest.mark.parametrize("command", ALLOWED)
def test_allowed_commands_pass(command: str) -> None:
    assert evaluate(command)


DENIED = [
    # abbreviations resolve to dangerous options in the real program, so only exact names pass
    ("sort --outp=x a", "--outp"),
    ("sort --compress-prog=sh a", "--compress-prog"),
    ("sed --in-pl s/a/b/ f", "--in-pl"),
    ("sed --sand -n p f", "--sand"),
    ("tail --foll a", "--foll"),
    ("wc --files0=x", "--files0"),
    ("ls --deref", "--deref"),
    ("grep --fil=x a", "--fil"),
    ("git grep --open-files-in=true x", "--open-files-in"),
    ("git log --outp=x", "--outp"),
    # bundled short options hide the dangerous letter
    ("sort -uoout a", "-o"),
    ("sed -ni s/a/b/ f", "-i"),
    ("tail -qf a", "-f"),
    ("ls -lL", "-L"),
    ("grep -rR x .", "-R"),
    ("grep -rif pats .", "-f"),
    # values that are not taken, values that are missing
    ("cat --number=3 a", "--number"),
    ("head -n", "-n"),
    # operand rules
    ("uniq in out", "out"),
    ("pwd x", "x"),
    ("git branch newbranch", "branch newbranch"),
    ("git cat-file -p -t HEAD", "cat-file"),
    ("git stash drop", "stash"),
    ("git -c x=y log", "-c"),
    ("git", "(none)"),
    ("find . -ok rm \\;", "-ok"),
    ("find . -quit2", "-quit2"),
]


@pytest.mark.parametrize(("command", "option"), DENIED)
def test_denied_arguments_name_the_option_and_rule(command: str, option: str) -> None:
    error = refusal(command)
    assert error.code == "argument_not_allowed"
    assert error.details["option"] == option
    assert error.details["program"] in command
    assert error.details["rule"]


def test_abbreviation_refusal_names_the_full_option() -> None:
    error = refusal("sort --outp=x a")
    assert "--output" in error.message


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("cat /etc/passwd", "path_outside_root"),
        ("cat ../x", "path_outside_root"),
        ("cat .env", "path_denied"),
        ("cat src/.ENV.local", "path_denied"),
        ("diff --to-file=/etc/passwd a", "path_outside_root"),
        ("realpath --relative-to=../.. a", "path_outside_root"),
        ("git show HEAD:.env", "path_denied"),
        ("git show HEAD:./.env", "path_denied"),
        ("git cat-file -p :0:.env", "path_denied"),
        ("git log -- ../outside", "path_outside_root"),
        ("git log -- ':(top).env'", "path_denied"),
        ("git diff /dev/null README.md", "path_outside_root"),
        ("grep x /etc/shadow", "path_outside_root"),
        ("find -P .. -name x", "path_outside_root"),
        ("python3 -c 1", "command_not_allowed"),
        ("xargs ls", "command_not_allowed"),
    ],
)
def test_operands_are_jailed_and_unknown_programs_denied(command: str, code: str) -> None:
    assert refusal(command).code == code


def test_pattern_operands_are_not_paths() -> None:
    assert evaluate("grep /etc/passwd README.md")
    assert evaluate("sed -n /x/p README.md")
    assert evaluate("jq -r .a a.json")
    assert evaluate("git grep -n /etc/passwd")


# -- decisions ---------------------------------------------------------------------------------------------


def test_ask_programs_need_approval_and_strictest_decision_wins() -> None:
    p = policy(allow=["cat", "sort"], ask=["wc"])
    stages = [(s.program, [w.text for w in s.args]) for s in parse_command("cat a | wc -l | sort").pipelines[0].stages]
    evaluation = p.evaluate(stages, PATHS)
    assert evaluation.decision is Decision.ASK
    assert evaluation.verdict.rule == "exec.ask"
    assert refusal("cat a | head -1", p).details == {"program": "head", "rule": "exec.allow"}


def test_decisions_are_ordered_allow_ask_deny() -> None:
    verdicts = [Verdict(Decision.ALLOW, "a", "r"), Verdict(Decision.DENY, "b", "r"), Verdict(Decision.ASK, "c", "r")]
    assert strictest(verdicts).program == "b"
    assert max(Decision) is Decision.DENY
    assert Decision.ALLOW < Decision.ASK < Decision.DENY


def test_program_removed_from_allow_is_denied() -> None:
    assert refusal("sed -n 1p a", policy(allow=["cat"])).code == "command_not_allowed"


# -- rules carry examples that are checked when the policy loads ------------------------------------------


def test_every_builtin_rule_example_holds() -> None:
    default = policy()
    default.check_examples(DenyList(DEFAULT_DENY))
    examples = sum(len(r.allow_examples) + len(r.deny_examples) for r in default.active_rules().values())
    assert examples >= 150


def test_operator_rule_with_failing_example_fails_config_loading(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[exec]\nallow = ["cat", "cksum"]\n'
        '[exec.rules.cksum]\nflags = ["-b"]\nallow_examples = ["cksum -b a"]\ndeny_examples = ["cksum -b b"]\n'
    )
    with pytest.raises(ConfigError) as info:
        load_settings(config, env={}, cwd=tmp_path)
    assert "cksum" in str(info.value)
    assert "deny example" in str(info.value)


def test_operator_rule_runs_with_its_options(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[exec]\nallow = ["cksum"]\n[exec.rules.cksum]\nflags = ["-b", "--tag"]\n'
        'allow_examples = ["cksum --tag a"]\ndeny_examples = ["cksum --check s", "cksum /etc/passwd"]\n'
    )
    settings = load_settings(config, env={}, cwd=tmp_path)
    p = CommandPolicy.from_config(settings.exec)
    assert evaluate("cksum -b x", p) == [["cksum", "-b", "x"]]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"allow": ["nosuchprogram"]}, "no rule for nosuchprogram"),
        ({"rules": {"sed": {}}}, "built-in rules"),
        ({"allow": ["cat"], "ask": ["cat"]}, "both list cat"),
    ],
)
def test_invalid_exec_config_is_rejected(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ExecConfig.model_validate(config)


def test_check_examples_reports_every_failure() -> None:
    p = policy()
    cat = p.rules["cat"]
    assert isinstance(cat, ProgramSpec)
    p.rules["cat"] = dataclasses.replace(cat, allow_examples=("cat -Z a",), deny_examples=("cat -n a",))
    with pytest.raises(PolicyExampleError) as info:
        p.check_examples(DenyList(DEFAULT_DENY))
    assert "allow example 'cat -Z a'" in str(info.value)
    assert "deny example 'cat -n a' was allowed" in str(info.value)
