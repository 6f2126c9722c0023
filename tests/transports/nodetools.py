"""The pinned Node 22 tools that scripts/setup.d/30-node22-conformance.sh installs into .tools/node22."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

NODE22_BIN: Final = Path(__file__).resolve().parents[2] / ".tools" / "node22" / "node_modules" / ".bin"
INSPECTOR: Final = NODE22_BIN / "mcp-inspector"
CONFORMANCE: Final = NODE22_BIN / "conformance"


def node22_env() -> dict[str, str]:
    """The environment for a pinned Node tool: Node 22 first on PATH, no stray REPO_SANDBOX_* settings."""
    for tool in (INSPECTOR, CONFORMANCE, NODE22_BIN / "node"):
        assert tool.exists(), f"{tool} is missing: run scripts/bootstrap (scripts/setup.d/30-node22-conformance.sh)"
    env = {key: value for key, value in os.environ.items() if not key.startswith("REPO_SANDBOX_")}
    env["PATH"] = f"{NODE22_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["CI"] = "true"
    return env
