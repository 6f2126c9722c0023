"""search_text reports progress while it runs, through the SDK client."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from repo_sandbox.config.loader import load_settings
from repo_sandbox.tools import search_text
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
async def test_a_running_search_sends_progress_notifications(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    root = tmp_path / "repo"
    for i in range(400):
        path = root / f"d{i % 20}" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("line\n" * 2000 + "needle\n")
    monkeypatch.setattr(search_text, "PROGRESS_EVERY_S", 0.001)
    ws = Workspace(
        load_settings(None, env={}, overrides={("workspace", "root"): str(root), ("search", "engine"): engine})
    )
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    try:
        async with Client(build_server(ws), mode="legacy") as client:
            with anyio.fail_after(20):
                result = await client.call_tool(
                    "search_text", {"pattern": "needle", "limit": 1000}, progress_callback=on_progress
                )
    finally:
        ws.close()
    assert result.structured_content is not None and result.structured_content["total_matches"] == 400
    assert seen, "no progress notification arrived"
    assert all(message is not None and message.endswith("files examined") for _, message in seen)
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)
