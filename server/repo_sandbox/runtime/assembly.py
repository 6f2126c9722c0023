"""Assemble the call pipeline from the operator's settings: which stages run, in which order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from repo_sandbox.runtime.audit_stage import AuditStage, OutputMaskingStage
from repo_sandbox.runtime.budget import BudgetStage
from repo_sandbox.runtime.clock import Clock, SystemClock
from repo_sandbox.runtime.elicitation import NonceLedger
from repo_sandbox.runtime.guard import GuardStage
from repo_sandbox.runtime.pipeline import CallPipeline, Stage
from repo_sandbox.runtime.stats import StatsStage
from repo_sandbox.tools.spec import ToolSpec
from repo_sandbox.workspace import Workspace


@dataclass
class AgentLoopState:
    """The per-session guard rails of one server (DESIGN.md §6), shared by its pipeline, listing and resources."""

    clock: Clock
    stats: StatsStage
    budget: BudgetStage
    guard: GuardStage
    nonces: NonceLedger = field(init=False)

    def __post_init__(self) -> None:
        self.nonces = NonceLedger(self.clock)

    @classmethod
    def from_workspace(cls, workspace: Workspace, clock: Clock | None = None) -> AgentLoopState:
        clock = clock or SystemClock()
        settings = workspace.settings
        return cls(
            clock, StatsStage(), BudgetStage(settings.budget, settings.limits), GuardStage(settings.guard, clock)
        )


def build_stages(workspace: Workspace, loop: AgentLoopState | None = None) -> list[Stage]:
    """The stages around every tool body, outermost first (DESIGN.md §2: budget -> guard -> tool -> redact -> audit).

    The audit stage, when configured, goes first so that it sees every outcome, including refusals by the
    stages inside it. Stats come next (they count the budget's and the guard's refusals too), then the
    budget (a guard refusal still costs a call), then the guard.
    """
    loop = loop or AgentLoopState.from_workspace(workspace)
    stages: list[Stage] = []
    if workspace.audit.enabled:
        stages.append(AuditStage(workspace.audit))  # outermost: sees every outcome
    stages += [loop.stats, loop.budget, loop.guard]
    if workspace.settings.audit.redact_output:
        stages.append(OutputMaskingStage(workspace))  # innermost: right around the tool body
    return stages


def build_pipeline(workspace: Workspace, tools: Iterable[ToolSpec], loop: AgentLoopState | None = None) -> CallPipeline:
    """The one pipeline that every transport (and `repo-sandbox call`) runs calls to `tools` through (they pass
    the tool table, `tools.registry.TOOLS`)."""
    return CallPipeline(workspace, tools, build_stages(workspace, loop))
