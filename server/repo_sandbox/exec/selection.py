"""Which OS sandbox execute_bash uses on this host (probed once per process), and how status reports it.

The probe (`exec.sandbox.probe`) runs the real jail shape of each candidate on `true`. Its result is what
every execute_bash result names in `sandbox`, and what `repo-sandbox://status` and `repo-sandbox://policy`
report under "exec": the backend, what was asked for, why each backend tried before it was rejected, and,
when commands run without an OS sandbox (or cannot run at all), a `warning` that says so in plain words.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from repo_sandbox.audit.log import AuditLog
from repo_sandbox.exec.sandbox import Backend, SandboxInfo, probe

AUTO_ORDER: Final = (Backend.BWRAP, Backend.BWRAP_NOPROC, Backend.LANDLOCK)
"""What `exec.sandbox = "auto"` tries, in order, before falling back to `none`."""

DENIED_NAMES: Final[dict[str, str]] = {
    Backend.BWRAP: "invisible: directories holding denied entries are rebuilt without them",
    Backend.BWRAP_NOPROC: "invisible: directories holding denied entries are rebuilt without them",
    Backend.LANDLOCK: "unlistable: a directory with a denied entry anywhere below it cannot be listed "
    "(Permission denied); its other entries stay readable by name",
    Backend.NONE: "unprotected: listing programs (ls, find, du, tree, grep -r) show them; only operands are checked",
}
"""How each backend keeps the names of deny-listed entries from commands (DESIGN.md §3, `exec.mounts`)."""

_probes: dict[tuple[str, bool], SandboxInfo] = {}
_probe_lock = threading.Lock()


def sandbox_info(requested: str, network: bool) -> SandboxInfo:
    """The probe result for this host, computed once per process. Blocking (runs the probe the first time)."""
    with _probe_lock:
        key = (requested, network)
        if key not in _probes:
            _probes[key] = probe(requested, network=network)
        return _probes[key]


def rejected(info: SandboxInfo) -> dict[str, str]:
    """Backends the probe tried and rejected, with the reason."""
    return {str(name): reason for name, reason in info.tried.items() if not reason.startswith("ok")}


def is_fallback(info: SandboxInfo) -> bool:
    """The backend in use is not the first one asked for (auto fell back, or nothing works)."""
    return info.backend is None or bool(rejected(info))


def warning(info: SandboxInfo) -> str | None:
    """A plain-words warning when commands run without an OS sandbox or cannot run at all."""
    if info.backend is None:
        return (
            f"execute_bash is unavailable: the configured sandbox '{info.requested}' does not work on this "
            "server, so every command is refused (sandbox_failed)."
        )
    if info.backend is Backend.NONE:
        why = (
            "because exec.sandbox is set to 'none'"
            if info.requested == "none"
            else "because no OS sandbox works here (see 'rejected')"
        )
        return (
            f"execute_bash runs commands WITHOUT an OS sandbox {why}: only the command policy, the rlimits and "
            "the timeout contain them."
        )
    return None


def audit_fallback(audit: AuditLog, info: SandboxInfo) -> None:
    """Record a sandbox that is not the one asked for, or none at all (`sandbox_fallback`)."""
    text = warning(info)
    if text is None and not rejected(info):
        return
    decision = "unavailable" if info.backend is None else "unsandboxed" if text is not None else "fallback"
    audit.decision(
        "sandbox_fallback",
        decision=decision,
        rule="exec.sandbox",
        requested=info.requested,
        backend=str(info.backend) if info.backend is not None else None,
        rejected=rejected(info),
    )


def sandbox_report(info: SandboxInfo) -> dict[str, Any]:
    """The sandbox half of the "exec" entry of status and policy."""
    report: dict[str, Any] = {
        "sandbox": info.backend.os_layer if info.backend is not None else None,
        "sandbox_backend": str(info.backend) if info.backend is not None else None,
        "sandbox_requested": info.requested,
        "unsandboxed": info.backend in (None, Backend.NONE),
        "tried": {str(name): reason for name, reason in info.tried.items()},
        "rejected": rejected(info),
        "denied_names": DENIED_NAMES[info.backend] if info.backend is not None else None,
    }
    text = warning(info)
    if text is not None:
        report["warning"] = text
    return report
