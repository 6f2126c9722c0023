"""`scripts/bench --quick` keeps working (a smoke test on a small tree; the real numbers are for people)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]


def _bench(*args: str, timeout: float) -> str:
    """What `python -m bench.run ARGS` printed; the run must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.run", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_bench_quick_prints_a_table_with_every_measurement(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "pkg").mkdir(parents=True)
    (corpus / "argparse.py").write_text("".join(f"def f{i}_cache(): return {i}  # self\n" for i in range(300)))
    (corpus / "pkg" / "mod.py").write_text("self = 1\n")
    table = _bench("--quick", "--no-stdlib", "--corpus", str(corpus), "--reads", "5", timeout=120)
    for name in (
        "search_text regex",
        "search_files **/*.py",
        "count_lines .",
        "read_file 200 lines",
        "spawn->initialize",
    ):
        assert name in table
    assert "read_file calls/s (sequential" in table and "calls in flight" in table and "server RSS" in table


def test_bench_session_quick_runs_the_whole_session_on_a_tiny_tree(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "pkg").mkdir(parents=True)
    (corpus / "argparse.py").write_text("".join(f"def f{i}(): return {i}  # self PYTHONHASHSEED\n" for i in range(300)))
    (corpus / "pkg" / "mod.py").write_text("class FooError(Exception): pass  # 2020-01-01 Löwis TODO\n")
    variant = "no memo:-census_memo,REPO_SANDBOX_WORKSPACE_TREE_INDEX=stat"
    table = _bench(
        "--session", "--quick", "--no-stdlib", "--no-big", "--corpus", str(corpus), "--idle", "0.1",
        "--variant", variant, timeout=300,
    )  # fmt: skip
    for kind in (
        "rare literal",
        "common literal",
        "regex, no literal",
        "word, -i",
        "alternation",
        "no hit",
        "non-ASCII",
    ):
        assert f"search_text {kind}" in table
    for row in ("search_files *.py", "count_lines .", "read_file 200 lines", "every page", "start-up to initialize"):
        assert row in table
    assert "peak RSS, server and children" in table and "search state" in table and '"version"' in table
    assert "variant 'no memo' over the first" in table and "session benchmark took" in table
    assert "checking results against the output schema" in table
    assert "round 1, with none: search_text rare literal" in table  # the first round's cold calls, apart
    assert "the Python SDK's floor (a bare MCPServer" in table
    assert "every page of search_files' listing (one rg --files run, then slices of it)" in table
    assert "search_text warm, rg run then its first matches returned: rare literal" in table
    assert "read_file's 200 lines (`head`): p50" in table
    assert "each one's output read" in table  # references write into a pipe that is read, not /dev/null
    assert "first call of another fresh server 3 s after tools/list" in table  # a search at an agent's pace
    assert "first search_text after the pause" in table


def test_the_peak_memory_sampler_counts_every_child_of_the_server() -> None:
    """`PeakRss` samples from its own process (no thread in the timing client) and walks the tree down."""
    from bench.procs import PeakRss

    allocate = (
        "import time; block = bytearray(96 * 1024 * 1024); block[::4096] = b'x' * len(block[::4096]); time.sleep(3)"
    )
    parent = "import subprocess, sys; subprocess.run([sys.executable, '-c', sys.argv[1]])"
    with PeakRss(interval_s=0.02) as peak, subprocess.Popen([sys.executable, "-c", parent, allocate]) as process:
        peak.watch(process.pid)
        process.wait(timeout=30)
    assert peak.peak_mib >= 96, peak.peak_mib


def test_the_memory_sampler_is_running_before_the_server_starts_and_samples_it_at_once() -> None:
    """`PeakRss` starts its sampler (a Python process) before the process it samples exists, so that the
    sampler's start-up never shares the machine with a fresh server's first, timed calls; `watch` returns
    once the first sample is taken: a process killed right after it was still sampled."""
    from bench.procs import PeakRss

    hold = "import sys, time; block = bytearray(64 * 1024 * 1024); block[::4096] = b'x' * len(block[::4096]); "
    hold += "print('ready', flush=True); time.sleep(30)"
    with (
        PeakRss(interval_s=0.02) as peak,
        subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE) as process,
    ):
        assert process.stdout is not None
        assert process.stdout.readline() == b"ready\n"
        peak.watch(process.pid)
        process.kill()
        process.wait(timeout=30)
    assert peak.peak_mib >= 64, peak.peak_mib


def test_a_child_forked_but_not_yet_execd_is_not_counted_again() -> None:
    """Such a child reports its parent's memory as its own (vfork shares it; fork shares it copy-on-write):
    every spawn of the server passes through that instant, and counting it doubled a round's peak."""
    from bench.procstat import tree_rss_kib

    forker = (
        "import os, sys, time; block = bytearray(96 * 1024 * 1024); block[::4096] = b'x' * len(block[::4096]); "
        "child = os.fork()\nif child == 0: time.sleep(5); os._exit(0)\n"
        "print(child, flush=True); sys.stdin.read(); os.kill(child, 9)"
    )
    with subprocess.Popen(
        [sys.executable, "-c", forker], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stdin is not None
        child = int(process.stdout.readline())
        assert child > 0
        total_mib = tree_rss_kib(process.pid) / 1024
        process.stdin.close()
    assert 96 <= total_mib < 150, total_mib


def test_the_floor_server_answers_as_its_references(tmp_path: Path) -> None:
    """The SDK floor is only a floor if it does the same job: every page of `files` together is
    `rg --files -g GLOB`'s list in path order, and `grep` returns `rg -n`'s first lines in path order with
    their count."""
    import anyio
    from bench.floor import FLOOR_SERVER
    from bench.procs import server_rg
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    rg = server_rg()
    for index in range(25):
        (tmp_path / f"d{index % 3}").mkdir(exist_ok=True)
        (tmp_path / f"d{index % 3}" / f"m{index:02}.py").write_text(f"x = {index}\n# TODO {index}\ny = {index}\n")
    (tmp_path / "notes.txt").write_text("TODO not python\n")
    for name in ("z.log", "a.log", "m.log"):
        (tmp_path / name).write_text("many\n" * 800)  # more lines than it sorts: a sorted run, stopped early

    async def ask() -> tuple[list[str], dict[str, object]]:
        async with Client(
            StdioServerParameters(command=sys.executable, args=[FLOOR_SERVER, rg]), mode="legacy"
        ) as bare:
            listed: list[str] = []
            offset: int | None = 0
            while offset is not None:
                page = await bare.call_tool(
                    "files", {"root": str(tmp_path), "glob": "*.py", "offset": offset, "limit": 7}
                )
                content = page.structured_content or {}
                listed += content["files"]
                offset = content["next_offset"]
            found = await bare.call_tool("grep", {"root": str(tmp_path), "pattern": "TODO", "limit": 5})
            many = await bare.call_tool("grep", {"root": str(tmp_path), "pattern": "many", "limit": 5})
            assert [(m["path"], m["line"]) for m in (many.structured_content or {})["matches"]] == [
                ("./a.log", n) for n in range(1, 6)
            ]
            return listed, found.structured_content or {}

    listed, found = anyio.run(ask)
    reference = subprocess.run(
        [rg, "--files", "-g", "*.py", "."], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert listed == sorted(reference.stdout.splitlines()) and len(listed) == 25
    lines = subprocess.run(
        [rg, "-n", "--no-heading", "--", "TODO", "."], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    expected = sorted(
        (path, int(number), text) for path, number, text in (line.split(":", 2) for line in lines.stdout.splitlines())
    )
    assert found["total"] == len(expected) == 26
    matches = found["matches"]
    assert isinstance(matches, list)
    assert [(m["path"], m["line"], m["text"]) for m in matches] == expected[:5]
