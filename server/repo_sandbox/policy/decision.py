"""Policy decisions for execute_bash, ordered so that the strictest wins through `max()`.

Every verdict names the rule that decided it (the program's allow/ask/deny list entry, or the option rule of
the program spec), so a refusal can always be explained to the agent and to the operator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from repo_sandbox.errors import ArgumentNotAllowedError, CommandNotAllowedError, SandboxError


class Decision(IntEnum):
    """What happens to a command; a larger value is stricter."""

    ALLOW = 0
    """Run it."""
    ASK = 1
    """Run it only after a human approves (`exec.ask`)."""
    DENY = 2
    """Refuse it."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision about one stage (or one argument) and the rule behind it."""

    decision: Decision
    program: str
    rule: str
    """The rule that decided, e.g. 'exec.allow', 'exec.ask', 'sed: option -i writes files'."""
    option: str | None = None
    reason: str = ""
    code: str = "command_not_allowed"
    details: dict[str, Any] = field(default_factory=dict[str, Any])

    def __lt__(self, other: Verdict) -> bool:
        return self.decision < other.decision

    def to_error(self) -> SandboxError:
        """The graded error for a DENY verdict."""
        details: dict[str, Any] = {"program": self.program, "rule": self.rule, **self.details}
        if self.option is not None:
            details["option"] = self.option
        if self.code == "argument_not_allowed":
            return ArgumentNotAllowedError(self.reason, **details)
        return CommandNotAllowedError(self.reason, **details)


def allow(program: str, rule: str = "exec.allow") -> Verdict:
    return Verdict(Decision.ALLOW, program, rule)


def deny_argument(program: str, option: str, reason: str, *, rule: str | None = None, **details: Any) -> Verdict:
    """An option or operand of an allowed program that the program's rule refuses."""
    return Verdict(
        Decision.DENY,
        program,
        rule or f"{program}: {option}",
        option=option,
        reason=reason,
        code="argument_not_allowed",
        details=details,
    )


def strictest(verdicts: Iterable[Verdict]) -> Verdict:
    """The strictest verdict; among equals, the first (so the earliest problem is reported)."""
    best: Verdict | None = None
    for verdict in verdicts:
        if best is None or verdict.decision > best.decision:
            best = verdict
    if best is None:
        raise ValueError("no verdicts")
    return best
