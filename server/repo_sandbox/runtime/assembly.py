"""Assemble the call pipeline from the operator's settings: which stages run, in which order."""

from __future__ import annotations

from repo_sandbox.audit.stage import AuditStage, OutputMaskingStage
from repo_sandbox.runtime.pipeline import CallPipeline, Stage
from repo_sandbox.workspace import Workspace


def build_stages(workspace: Workspace) -> list[Stage]:
    """The stages around every tool body, outermost first (DESIGN.md §2: budget -> guard -> tool -> redact -> audit).

    The audit stage, when configured, goes first so that it sees every outcome, including refusals by the
    stages inside it.
    """
    stages: list[Stage] = []
    if workspace.audit.enabled:
        stages.append(AuditStage(workspace.audit))  # outermost: sees every outcome
    # (budget, guard and policy stages go here)
    if workspace.settings.audit.redact_output:
        stages.append(OutputMaskingStage(workspace))  # innermost: right around the tool body
    return stages


def build_pipeline(workspace: Workspace) -> CallPipeline:
    """The one pipeline that every transport (and `repo-sandbox call`) runs tool calls through."""
    return CallPipeline(workspace, build_stages(workspace))
