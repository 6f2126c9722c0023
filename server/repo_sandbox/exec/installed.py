"""Which of the programs the operator allows are installed here: the tool description, the policy resource and a
refused command's details name only those; the status resource names the missing ones.

A program runs as its binary (awk runs gawk) found on the sandbox's PATH (`exec.sandbox.installed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from repo_sandbox.exec.sandbox import installed
from repo_sandbox.policy.builtin_programs import BUILTIN_SPECS
from repo_sandbox.policy.exec_model import DEFAULT_ALLOW, ExecConfig


@cache
def _binaries() -> dict[str, str]:
    return {spec.name: spec.binary or spec.name for spec in BUILTIN_SPECS}


def binary_of(program: str) -> str:
    return _binaries().get(program, program)


@dataclass(frozen=True, slots=True)
class Programs:
    """The allowed (`allow`) and approval-gated (`ask`) programs that are installed, and those that are not."""

    allow: tuple[str, ...]
    ask: tuple[str, ...]
    missing: tuple[str, ...]

    def short(self) -> str:
        """The programs that run without asking, on one line (a refused command's details)."""
        return " ".join(self.allow)


def programs(config: ExecConfig | None) -> Programs:
    """The installed and the missing programs of `config` (None: the default allowlist)."""
    allow = list(dict.fromkeys(DEFAULT_ALLOW if config is None else config.allow))
    ask = [] if config is None else [name for name in dict.fromkeys(config.ask) if name not in allow]
    missing = tuple(sorted(name for name in (*allow, *ask) if installed(binary_of(name)) is None))
    return Programs(
        allow=tuple(sorted(name for name in allow if name not in missing)),
        ask=tuple(sorted(name for name in ask if name not in missing)),
        missing=missing,
    )
