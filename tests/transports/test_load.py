"""A bounded loopback load test: 50 concurrent sessions doing mixed tool calls for 30 s against the real
server process, over Streamable HTTP (both eras) and WebSocket. No errors, no leaked processes or file
descriptors; the latency percentiles are printed and written to bench/results/load.json."""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness import TOKEN, Subprocess, http_client, running_subprocess, wait_until
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from ws_client import websocket_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.e2e]

DURATION_S = 30.0
SESSIONS = [("http", "legacy")] * 18 + [("http", "auto")] * 14 + [("ws", "legacy")] * 9 + [("ws", "auto")] * 9
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "load.json"


def mixed_calls(session: int) -> list[tuple[str, dict[str, Any]]]:
    package = f"pkg{session % 10}"
    return [
        ("search_text", {"pattern": "TODO", "path": package, "limit": 20}),
        ("read_file", {"path": f"{package}/module_{session % 30}.py", "offset": 10, "limit": 50}),
        ("search_files", {"pattern": "*.py", "path": package, "limit": 50}),
        ("count_lines", {"path": package}),
        ("read_file", {"path": "../outside.txt"}),  # a graded error is a normal answer, not a failure
    ]


@dataclass
class Tally:
    latencies_ms: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    failures: list[str] = field(default_factory=list[str])
    sessions_done: int = 0


@asynccontextmanager
async def connect(server: Subprocess, transport: str, mode: str) -> AsyncIterator[Client]:
    if transport == "http":
        async with (
            http_client() as http,
            Client(streamable_http_client(server.mcp_url, http_client=http), mode=mode) as client,
        ):
            yield client
    else:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with Client(websocket_client(server.ws_url, headers), mode=mode) as client:
            yield client


async def run_session(server: Subprocess, index: int, transport: str, mode: str, deadline: float, tally: Tally) -> None:
    calls = mixed_calls(index)
    try:
        async with connect(server, transport, mode) as client:
            step = 0
            while time.monotonic() < deadline:
                name, arguments = calls[step % len(calls)]
                started = time.perf_counter()
                result = await client.call_tool(name, arguments)
                elapsed = (time.perf_counter() - started) * 1000
                tally.latencies_ms.setdefault(name, []).append(elapsed)
                expected_error = arguments.get("path") == "../outside.txt"
                if result.is_error is not expected_error:
                    tally.failures.append(f"{transport}/{mode} {name}: {result.structured_content}")
                step += 1
    except Exception as exc:  # noqa: BLE001  # every failure is collected and asserted on below
        tally.failures.append(f"{transport}/{mode} session {index}: {exc!r}")
    tally.sessions_done += 1


def make_corpus(root: Path) -> None:
    for package in range(10):
        directory = root / f"pkg{package}"
        directory.mkdir(parents=True)
        for module in range(30):
            lines = [f"def function_{i}(x):\n    return x + {i}  # TODO tune {i}\n" for i in range(60)]
            (directory / f"module_{module}.py").write_text("".join(lines))
    (root.parent / "outside.txt").write_text("not yours\n")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def child_pids(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in children.read_text().split()] if children.exists() else []


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def test_fifty_sessions_of_mixed_calls_for_thirty_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    make_corpus(root)
    tally = Tally()
    # Search runs kept for a next page hold a directory and rg's pipe: short-lived here, so that the check for
    # leaks after the sessions end also sees every kept run end.
    keep = {"REPO_SANDBOX_SEARCH_KEEP_RUN_S": "1"}
    with running_subprocess(root, tmp_path / "server.log", "--log-level", "WARNING", env=keep) as server:
        pid = server.process.pid
        fds_before = open_fds(pid)
        cpu_before = cpu_seconds(pid)
        started = time.monotonic()
        with anyio.fail_after(DURATION_S + 60):
            async with anyio.create_task_group() as tg:
                for index, (transport, mode) in enumerate(SESSIONS):
                    tg.start_soon(run_session, server, index, transport, mode, started + DURATION_S, tally)
        wall_s = time.monotonic() - started
        server_cpu_s = cpu_seconds(pid) - cpu_before
        await wait_until(lambda: open_fds(pid) <= fds_before)  # sessions closed and kept runs ended: all released
        fds_after, children = open_fds(pid), child_pids(pid)
        assert server.stop() == 0
        log = server.log_text()

    every = [latency for latencies in tally.latencies_ms.values() for latency in latencies]
    summary = {
        "sessions": len(SESSIONS),
        "mix": {"http-2025-11-25": 18, "http-2026-07-28": 14, "ws-2025-11-25": 9, "ws-2026-07-28": 9},
        "duration_s": round(wall_s, 1),
        "calls": len(every),
        "calls_per_s": round(len(every) / wall_s, 1),
        "p50_ms": round(statistics.median(every), 1),
        "p95_ms": round(percentile(every, 0.95), 1),
        "p99_ms": round(percentile(every, 0.99), 1),
        "p95_ms_by_tool": {name: round(percentile(values, 0.95), 1) for name, values in tally.latencies_ms.items()},
        "server_cpu_s": round(server_cpu_s, 1),
        "server_cpu_ms_per_call": round(server_cpu_s * 1000 / len(every), 2),
        "server_fds_before": fds_before,
        "server_fds_after": fds_after,
        "failures": len(tally.failures),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    with capsys.disabled():  # shown in every run, CI's included
        print(f"\nload test: {json.dumps(summary)}")

    assert tally.failures == []
    assert tally.sessions_done == len(SESSIONS)
    assert len(every) > len(SESSIONS) * 10
    assert children == []
    assert fds_after <= fds_before
    assert "Traceback" not in log
