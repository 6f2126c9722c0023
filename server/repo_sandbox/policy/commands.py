"""The command policy: which programs run, under which rule, and whether a human must approve.

`exec.allow` programs run, `exec.ask` programs need approval, everything else is denied. Each stage of a
pipeline is judged by its program's rule (`policy.programs`, `policy.find`, `policy.git.rule`, or an operator rule
from `[exec.rules.NAME]`); the pipeline's decision is the strictest of its stages (ALLOW < ASK < DENY). Rules
carry example command lines that must be allowed or denied; `check_examples` runs them whenever a policy is
built from configuration, so a rule that no longer does what its examples say stops the server from starting
(`repo-sandbox` over stdio runs the check right after the handshake, and stops then).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repo_sandbox.errors import SandboxError
from repo_sandbox.policy._argv import Refused, table
from repo_sandbox.policy.builtin_programs import BUILTIN_SPECS
from repo_sandbox.policy.decision import Decision, Verdict, allow, strictest
from repo_sandbox.policy.deny import DEFAULT_DENY, DenyList
from repo_sandbox.policy.find import FindRule
from repo_sandbox.policy.git.rule import GitRule
from repo_sandbox.policy.more_programs import more_rules
from repo_sandbox.policy.operands import LexicalPaths
from repo_sandbox.policy.programs import PathChecker, ProgramRule, ProgramSpec, StagePlan

if TYPE_CHECKING:
    from repo_sandbox.policy.exec_model import ExecConfig, ProgramRuleConfig


class PolicyExampleError(ValueError):
    """A rule's allow/deny examples do not hold; the message lists every failing example."""


@dataclass(frozen=True, slots=True)
class AnyArgumentsRule:
    """An operator rule that checks no arguments (`any_arguments = true`)."""

    name: str
    forced: tuple[str, ...] = ()
    summary: str = "any arguments (operator rule)"
    allow_examples: tuple[str, ...] = ()
    deny_examples: tuple[str, ...] = ()

    def evaluate(self, args: Sequence[str], paths: PathChecker) -> StagePlan:
        del paths
        return StagePlan(self.name, self.name, (*self.forced, *args))


def builtin_rules(deny_patterns: Iterable[str] = ()) -> dict[str, ProgramRule]:
    rules: dict[str, ProgramRule] = {spec.name: spec for spec in BUILTIN_SPECS}
    awk = rules["awk"]
    assert isinstance(awk, ProgramSpec)
    rules["gawk"] = ProgramSpec(
        "gawk", awk.options, awk.operands, awk.summary, "gawk", forced=awk.forced,
        allow_examples=("gawk 'NR==1' a.txt",), deny_examples=("gawk -f x a",),
    )  # fmt: skip
    rules.update({rule.name: rule for rule in more_rules()})
    rules["find"] = FindRule()
    rules["git"] = GitRule(tuple(deny_patterns))
    return rules


def rule_from_config(name: str, config: ProgramRuleConfig) -> ProgramRule:
    if config.any_arguments:
        return AnyArgumentsRule(name, tuple(config.forced_args), allow_examples=tuple(config.allow_examples),
                                deny_examples=tuple(config.deny_examples))  # fmt: skip
    return ProgramSpec(
        name,
        table(" ".join(config.flags), " ".join(config.options_with_value)),
        operands=config.operands,
        summary="operator rule",
        path_options=frozenset(config.path_options),
        forced=tuple(config.forced_args),
        allow_examples=tuple(config.allow_examples),
        deny_examples=tuple(config.deny_examples),
    )


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The policy's answer for a whole pipeline: the strictest verdict and, unless denied, what to run."""

    verdict: Verdict
    plans: tuple[StagePlan, ...]

    @property
    def decision(self) -> Decision:
        return self.verdict.decision


class CommandPolicy:
    """Pure evaluation of argv lists against the program rules and the allow/ask lists."""

    def __init__(self, rules: Mapping[str, ProgramRule], allow_list: Iterable[str], ask_list: Iterable[str]) -> None:
        self.rules = dict(rules)
        self.allow = frozenset(allow_list)
        self.ask = frozenset(ask_list)

    @classmethod
    def from_config(cls, config: ExecConfig, deny_patterns: Iterable[str] = ()) -> CommandPolicy:
        """The policy of a configuration, which is checked first (`validate_exec_config`, once per configuration):
        loading the settings may have left that check for later.

        Raises:
            ValueError: the configuration does not hold (unknown names, redefined built-ins, failing examples).
        """
        validate_exec_config(config)
        return cls._build(config, deny_patterns)

    @classmethod
    def _build(cls, config: ExecConfig, deny_patterns: Iterable[str] = ()) -> CommandPolicy:
        rules = builtin_rules(deny_patterns)
        for name, rule_config in config.rules.items():
            rules[name] = rule_from_config(name, rule_config)
        return cls(rules, config.allow, config.ask)

    def active_rules(self) -> dict[str, ProgramRule]:
        return {name: rule for name, rule in self.rules.items() if name in self.allow or name in self.ask}

    def evaluate_stage(self, program: str, args: Sequence[str], paths: PathChecker) -> tuple[Verdict, StagePlan]:
        """Raises: SandboxError (command_not_allowed, argument_not_allowed, or a jail error for a path)."""
        rule = self.rules.get(program)
        if rule is None or (program not in self.allow and program not in self.ask):
            raise Verdict(
                Decision.DENY, program, "exec.allow", reason=f"Program '{program}' is not allowed by the policy."
            ).to_error()
        try:
            plan = rule.evaluate(args, paths)
        except Refused as refused:
            raise refused.verdict.to_error() from None
        if program in self.ask:
            return Verdict(Decision.ASK, program, "exec.ask", reason=f"'{program}' needs approval."), plan
        return allow(program), plan

    def evaluate(self, stages: Sequence[tuple[str, Sequence[str]]], paths: PathChecker) -> Evaluation:
        """Judge every stage; the first refusal raises, otherwise the strictest of ALLOW/ASK is returned."""
        verdicts: list[Verdict] = []
        plans: list[StagePlan] = []
        for program, args in stages:
            verdict, plan = self.evaluate_stage(program, args, paths)
            verdicts.append(verdict)
            plans.append(plan)
        return Evaluation(strictest(verdicts), tuple(plans))

    def check_examples(self, deny: DenyList) -> None:
        """Raises: PolicyExampleError naming each active rule whose examples do not hold."""
        from repo_sandbox.shell.parse import parse_command

        paths = LexicalPaths(deny)
        failures: list[str] = []

        def judge(example: str) -> None:  # every pipeline of a list, each on its own
            for pipeline in parse_command(example).pipelines:
                self.evaluate([(s.program, [w.text for w in s.args]) for s in pipeline.stages], paths)

        for name, rule in sorted(self.active_rules().items()):
            for example in rule.allow_examples:
                try:
                    judge(example)
                except SandboxError as exc:
                    failures.append(f"rule '{name}': allow example {example!r} was refused ({exc.code}: {exc})")
            for example in rule.deny_examples:
                try:
                    parse_command(example)
                except SandboxError as exc:
                    failures.append(f"rule '{name}': deny example {example!r} does not parse ({exc.code})")
                    continue
                try:
                    judge(example)
                except SandboxError:
                    continue
                failures.append(f"rule '{name}': deny example {example!r} was allowed")
        if failures:
            raise PolicyExampleError("; ".join(failures))

    def describe(self) -> dict[str, Any]:
        """What is allowed, for the policy resource: program -> decision and a one-line summary."""
        return {
            name: {"decision": "ask" if name in self.ask else "allow", "summary": rule.summary}
            for name, rule in sorted(self.active_rules().items())
        }


def validate_exec_config(config: ExecConfig) -> None:
    """Called by the config model: names must be known, rules must not redefine built-ins, examples must hold.

    Raises:
        ValueError: naming the key and the problem.
    """
    _validate_cached(config.model_dump_json(include={"allow", "ask", "rules"}), config)


_validated: set[str] = set()


def _validate_cached(key: str, config: ExecConfig) -> None:
    if key in _validated:
        return
    builtins = builtin_rules()
    redefined = sorted(set(config.rules) & set(builtins))
    if redefined:
        raise ValueError(f"rules: {', '.join(redefined)} have built-in rules and cannot be redefined")
    known = set(builtins) | set(config.rules)
    for list_name in ("allow", "ask"):
        unknown = sorted(set(getattr(config, list_name)) - known)
        if unknown:
            raise ValueError(f"{list_name}: no rule for {', '.join(unknown)} (add one under [exec.rules.NAME])")
    both = sorted(set(config.allow) & set(config.ask))
    if both:
        raise ValueError(f"allow and ask both list {', '.join(both)}")
    CommandPolicy._build(config).check_examples(DenyList(DEFAULT_DENY))  # pyright: ignore[reportPrivateUsage]
    _validated.add(key)
