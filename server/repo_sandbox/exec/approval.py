"""Approval of a command whose programs are in `exec.ask`: the user's yes through the call's `approve`
provider (`runtime.approvals`), fail closed without one, every step recorded in the audit trail."""

from __future__ import annotations

from collections.abc import Collection

from repo_sandbox.audit.log import AuditLog
from repo_sandbox.calls import Approve
from repo_sandbox.errors import ApprovalDeniedError, ApprovalRequiredError
from repo_sandbox.policy.commands import Evaluation

RULE = "exec.ask"


async def obtain_approval(
    audit: AuditLog, ask: Collection[str], command: str, evaluation: Evaluation, cwd: str, approve: Approve | None
) -> None:
    """Returns when the user approved this one run.

    Raises:
        ApprovalRequiredError: the client cannot ask its user.
        ApprovalDeniedError: the user declined, cancelled, or did not tick "approve".
    """
    programs = sorted({p.program for p in evaluation.plans if p.program in ask})
    details = {"programs": programs, "rule": RULE, "cwd": cwd}
    if approve is None:
        audit.decision("approval_required", decision="deny", rule=RULE, programs=programs, command=command)
        raise ApprovalRequiredError(
            f"'{', '.join(programs)}' needs a human's approval (exec.ask), which this client cannot give.", **details
        )
    audit.decision("approval_asked", decision="ask", rule=RULE, programs=programs, command=command)
    approved = await approve(command, details)  # 2026-07-28: raises InputRequired the first time (a pause)
    audit.decision(
        "approval_granted" if approved else "approval_denied",
        decision="allow" if approved else "deny",
        rule=RULE,
        programs=programs,
        command=command,
    )
    if not approved:
        raise ApprovalDeniedError("The user did not approve this command.", **details)
