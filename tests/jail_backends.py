"""A workspace whose jail resolves paths one chosen way, for tables that run once per jail backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.workspace import Workspace


def workspace_on(root: Path, backend: str, settings: dict[tuple[str, str], Any] | None = None) -> Workspace:
    """A workspace over `root` whose jail uses `backend`: "openat2", or the O_NOFOLLOW walk ("walk"), either
    without /proc when the name ends in "noproc" (`settings`: more overrides, keyed (section, key)).

    The openat2 row is skipped on a kernel without openat2: the server itself then uses the walk, which the
    walk rows test. It is a platform guard, never a stand-in: on CI and here openat2 exists (0 skipped)."""
    ws = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): str(root), **(settings or {})}))
    if backend == "openat2" and not ws.jail.uses_openat2:
        ws.close()
        pytest.skip("openat2 is not available on this kernel")
    ws.jail.uses_openat2 = backend == "openat2"
    ws.jail.uses_proc = ws.jail.uses_proc and not backend.endswith("noproc")
    return ws
