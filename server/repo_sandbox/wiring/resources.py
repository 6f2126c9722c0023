"""The JSON resources `repo-sandbox://policy` and `repo-sandbox://status` (DESIGN.md §6).

policy: what the operator allows, so the agent need not probe (tools, path rules, limits, exec, guard, budget).
status: the same in brief plus the live state of the *calling* session: its circuits, its budget, its
per-tool calls/errors/time (the source documents' tool stats), the server-wide stats and the audit trail's health.
The deny-list itself is not revealed (only that it exists and what it covers by default).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from repo_sandbox import __version__, heap
from repo_sandbox.engine.select import report as search_report
from repo_sandbox.runtime.assembly import AgentLoopState
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.wiring.identity import POLICY_URI, SERVER_NAME
from repo_sandbox.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Caller:
    """Who reads a resource: their session and whether their client can ask its user."""

    session_id: str
    can_elicit: bool


def exec_report(workspace: Workspace, *, programs: bool = False) -> dict[str, Any]:
    """The "exec" entry: is execute_bash on, which OS sandbox runs it (the same name every result's `sandbox`
    field reports), why other backends were rejected, a `warning` when it runs unsandboxed, and (policy)
    what each program may do. Blocking the first time: the sandbox probe runs once per process."""
    from repo_sandbox.exec.service import exec_service

    return exec_service(workspace).report(programs=programs)


def _tools(workspace: Workspace, caller: Caller) -> list[dict[str, Any]]:
    return [
        {
            "name": spec.name,
            "read_only": spec.read_only,
            "available": spec.offered(workspace.settings, can_elicit=caller.can_elicit),
        }
        for spec in TOOLS
    ]


def _paths(workspace: Workspace) -> dict[str, Any]:
    ws = workspace.settings.workspace
    return {
        "root": ".",
        "read_only": True,
        "deny_rules": len(ws.effective_deny),
        "deny": "Paths on the operator's deny-list (by default git internals, .env files, keys and credential "
        "files) are hidden from every tool, even as names; do not probe for them.",
        "respect_gitignore": ws.respect_gitignore,
        "include_hidden_default": ws.include_hidden,
        "allow_hard_links": ws.allow_hard_links,
        "max_depth": ws.max_depth,
        "max_walk_entries": ws.max_walk_entries,
    }


def policy_document(workspace: Workspace, caller: Caller, exec_entry: dict[str, Any]) -> dict[str, Any]:
    """`exec_entry`: `exec_report(workspace, programs=True)`, computed off the event loop."""
    settings = workspace.settings
    return {
        "tools": _tools(workspace, caller),
        "paths": _paths(workspace),
        "limits": settings.limits.model_dump(mode="json"),
        "exec": exec_entry,
        "guard": settings.guard.model_dump(mode="json"),
        "budget": settings.budget.model_dump(mode="json"),
        "interaction": {
            "client_can_elicit": caller.can_elicit,
            "ask_user": caller.can_elicit,
            "approvals": "Commands that need approval are shown to the user, one call at a time."
            if caller.can_elicit
            else "This client cannot ask its user, so commands that need approval are refused (approval_required).",
        },
    }


def _audit(workspace: Workspace) -> dict[str, Any]:
    """The audit trail's state; not its file path or last error text, which name places on the host."""
    health = workspace.audit.health()
    return {key: value for key, value in health.items() if key not in ("path", "last_error")}


def status_document(
    workspace: Workspace, loop: AgentLoopState, caller: Caller, exec_entry: dict[str, Any]
) -> dict[str, Any]:
    """`exec_entry`: `exec_report(workspace)`, computed off the event loop."""
    settings = workspace.settings
    guard = loop.guard.sessions.peek(caller.session_id)
    guard_state = guard.snapshot() if guard is not None else {"circuits": [], "last_call": None}
    stats = loop.stats.snapshot(caller.session_id)
    return {
        "server": {"name": SERVER_NAME, "version": __version__},
        "session": {"id": caller.session_id, "client_can_elicit": caller.can_elicit},
        "policy": {"read_only": True, "deny_rules": len(settings.workspace.effective_deny), "see": POLICY_URI},
        "exec": exec_entry,
        "search": search_report(workspace),
        "tree_index": workspace.trees.describe(),
        "limits": settings.limits.model_dump(mode="json"),
        "guard": {"config": settings.guard.model_dump(mode="json"), **guard_state},
        "budget": {"config": settings.budget.model_dump(mode="json"), **loop.budget.snapshot(caller.session_id)},
        "tools": stats["session"],
        "server_tools": stats["server"],
        "audit": _audit(workspace),
        "garbage_collector": heap.describe(),
        "thread_switch_interval_ms": sys.getswitchinterval() * 1000,
    }


def to_json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, default=str)
