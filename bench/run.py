"""Run the benchmark: our tools through the MCP SDK client over stdio against the CLI references.

Each round runs every measurement once, in shuffled order, so a busy machine slows both sides of a ratio
alike; the table shows the median time of each and the median of the per-round ratios to its reference.
It is a tool for people, not a timed test.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench.corpus import pick_read_target, stdlib_corpus
from bench.session import SERVER as SESSION_SERVER
from bench.session import SERVER_ENV as SESSION_ENV
from bench.session import Server

SERVER = str(Path(sys.executable).with_name("repo-sandbox"))
BARE = str(Path(__file__).with_name("bare_server.py"))
REGEX = r"def \w+_cache"
LITERAL = "self"
SERVER_ENV = {
    **os.environ,
    "REPO_SANDBOX_GUARD_REPEAT_THRESHOLD": "1000",  # a benchmark repeats identical calls on purpose
    "REPO_SANDBOX_BUDGET_MAX_CALLS": "0",
    "REPO_SANDBOX_BUDGET_MAX_OUTPUT_BYTES": "0",
}


IN_FLIGHT = 4
"""Concurrent read_file calls for the throughput measured with calls in flight (an agent's parallel tool calls)."""


@dataclass
class Row:
    name: str
    reference: str | None
    times: list[float] = field(default_factory=list[float])
    ratios: list[float] = field(default_factory=list[float])
    note: str = ""


def _shares(total: int, parts: int) -> list[int]:
    """`total` split into `parts` near-equal whole shares."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _run(argv: list[str], cwd: Path) -> bytes:
    return subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, check=False).stdout


def _rg() -> str:
    found = shutil.which("rg") or str(Path(sys.executable).with_name("rg"))
    if not os.access(found, os.X_OK):
        raise SystemExit("bench: no rg to compare with (install the project: scripts/bootstrap)")
    return found


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _our_server_pids() -> list[int]:
    """Children of this process that run repo-sandbox (only processes we started)."""
    me = str(os.getpid())
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"repo-sandbox" in cmdline:
            pids.append(int(entry.name))
    return pids


async def _timed(action: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await action()
    return (time.perf_counter() - start) * 1000


Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


async def _read_p50(call: Call, arguments: dict[str, Any], reads: int) -> float:
    samples = [await _timed(lambda: call("read_file", arguments)) for _ in range(reads)]
    return statistics.median(samples)


async def _read_in_flight(call: Call, arguments: dict[str, Any], reads: int) -> float:
    """Calls per second with IN_FLIGHT calls outstanding at a time through the one client session."""

    async def worker(calls: int) -> None:
        for _ in range(calls):
            await call("read_file", arguments)

    start = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for calls in _shares(reads, IN_FLIGHT):
            tasks.start_soon(worker, calls)
    return reads / (time.perf_counter() - start)


async def _status_text(client: Client) -> str:
    status = await client.read_resource("repo-sandbox://status")
    return getattr(status.contents[0], "text", "")


async def _warm_up(client: Client) -> None:
    """A search that reads every file: the tree index and the census memo are then what an agent searching
    the same repository meets."""
    await client.call_tool("search_text", {"pattern": REGEX, "limit": 1000})


async def _spawn_to_initialize(command: str, args: list[str]) -> float:
    start = time.perf_counter()
    async with Client(StdioServerParameters(command=command, args=args), mode="legacy"):
        elapsed = (time.perf_counter() - start) * 1000
    return elapsed


def _selected(name: str, reference: str | None, only: list[str]) -> bool:
    return not only or any(part in name or (reference is not None and part in reference) for part in only)


async def bench(corpus: Path, rounds: int, reads: int, only: list[str]) -> tuple[list[Row], dict[str, Any]]:
    rg = _rg()
    target = pick_read_target(corpus)
    rel = str(target.relative_to(corpus))
    rows = {
        name: Row(name, ref)
        for name, ref in [
            ("rg -n (regex)", None),
            ("search_text regex, all hits", "rg -n (regex)"),
            ("search_text regex, all hits, Python engine", "rg -n (regex)"),
            ("rg -n (literal, full run)", None),
            ("search_text literal, first page", "rg -n (literal, full run)"),
            ("rg --files -g '**/*.py'", None),
            ("search_files **/*.py", "rg --files -g '**/*.py'"),
            ("rg --files -0 | xargs -0 cat | wc -l", None),
            ("count_lines .", "rg --files -0 | xargs -0 cat | wc -l"),
            ("head -n 200 (spawned)", None),
            ("read_file 200 lines (p50)", "head -n 200 (spawned)"),
            ("bare MCPServer spawn->initialize", None),
            ("repo-sandbox spawn->initialize", "bare MCPServer spawn->initialize"),
        ]
    }
    extra: dict[str, Any] = {}
    params = StdioServerParameters(command=SERVER, args=["--root", str(corpus)], env=SERVER_ENV)
    python_params = StdioServerParameters(
        command=SERVER, args=["--root", str(corpus)], env={**SERVER_ENV, "REPO_SANDBOX_SEARCH_ENGINE": "python"}
    )
    async with Client(params, mode="legacy") as client, Client(python_params, mode="legacy") as python_client:

        async def call(tool: str, arguments: dict[str, Any], via: Client = client) -> dict[str, Any]:
            result = await via.call_tool(tool, arguments)
            assert not result.is_error, result.structured_content
            return result.structured_content or {}

        async def cli(argv: list[str]) -> None:
            await anyio.to_thread.run_sync(_run, argv, corpus)

        first_page = await call("search_text", {"pattern": LITERAL, "fixed_strings": True, "limit": 100})
        extra["first page bytes"] = len(str(first_page).encode())
        for via in (client, python_client):
            await _warm_up(via)
        extra["status"] = await _status_text(client)
        measures: dict[str, Callable[[], Awaitable[Any]]] = {
            "rg -n (regex)": lambda: cli([rg, "-n", REGEX, "."]),
            "search_text regex, all hits": lambda: call("search_text", {"pattern": REGEX, "limit": 1000}),
            "search_text regex, all hits, Python engine": lambda: call(
                "search_text", {"pattern": REGEX, "limit": 1000}, python_client
            ),
            "rg -n (literal, full run)": lambda: cli([rg, "-n", "-F", LITERAL, "."]),
            "search_text literal, first page": lambda: call(
                "search_text", {"pattern": LITERAL, "fixed_strings": True, "limit": 100}
            ),
            "rg --files -g '**/*.py'": lambda: cli([rg, "--files", "-g", "**/*.py", "."]),
            "search_files **/*.py": lambda: call("search_files", {"pattern": "**/*.py", "limit": 1000}),
            "rg --files -0 | xargs -0 cat | wc -l": lambda: cli(
                ["sh", "-c", f"'{rg}' --files -0 . | xargs -0 cat | wc -l"]
            ),
            "count_lines .": lambda: call("count_lines", {"path": "."}),
            "head -n 200 (spawned)": lambda: cli(["head", "-n", "200", rel]),
        }

        wanted = {name for name, row in rows.items() if _selected(name, row.reference, only)}
        wanted |= {row.reference for name, row in rows.items() if name in wanted and row.reference is not None}
        rows = {name: row for name, row in rows.items() if name in wanted}
        optional = ["read_file 200 lines (p50)"] if "read_file 200 lines (p50)" in wanted else []
        if wanted & {"bare MCPServer spawn->initialize", "repo-sandbox spawn->initialize"}:
            optional.append("spawns")
        read_rates: list[float] = []
        in_flight_rates: list[float] = []
        for round_number in range(rounds):
            # The same file, its path spelt two ways in turn: more than the guard's most identical calls in a
            # row (1000) would be refused as repeated when only read_file is measured.
            read_args = {"path": f"./{rel}" if round_number % 2 else rel, "offset": 1, "limit": 200}
            order = [*(name for name in measures if name in wanted), *optional]
            random.shuffle(order)
            measured: dict[str, float] = {}
            for name in order:
                if name == "read_file 200 lines (p50)":
                    start = time.perf_counter()
                    measured[name] = await _read_p50(call, read_args, reads)
                    read_rates.append(reads / (time.perf_counter() - start))
                    in_flight_rates.append(await _read_in_flight(call, read_args, reads))
                elif name == "spawns":
                    measured["bare MCPServer spawn->initialize"] = await _spawn_to_initialize(sys.executable, [BARE])
                    measured["repo-sandbox spawn->initialize"] = await _spawn_to_initialize(
                        SERVER, ["--root", str(corpus)]
                    )
                else:
                    measured[name] = await _timed(measures[name])
            for name, value in measured.items():
                if name not in rows:
                    continue
                row = rows[name]
                row.times.append(value)
                if row.reference is not None:
                    row.ratios.append(value / measured[row.reference])
        extra["read_file calls/s"] = statistics.median(read_rates) if read_rates else None
        extra["read_file calls/s in flight"] = statistics.median(in_flight_rates) if in_flight_rates else None
        pids = _our_server_pids()
        extra["server RSS MiB"] = max((_rss_kib(pid) for pid in pids), default=0) / 1024  # the larger of the two
    return list(rows.values()), extra


def render(rows: list[Row], extra: dict[str, Any], corpus: Path, rounds: int) -> str:
    lines = [
        f"corpus: {corpus}  rounds: {rounds}  load average: {os.getloadavg()[0]:.2f}",
        "",
        f"| {'measurement':<44} | {'median ms':>9} | {'x reference (median of rounds)':>30} |",
        f"|{'-' * 46}|{'-' * 11}|{'-' * 32}|",
    ]
    for row in rows:
        ratio = f"{statistics.median(row.ratios):.2f}" if row.ratios else "ref"
        lines.append(f"| {row.name:<44} | {statistics.median(row.times):>9.1f} | {ratio:>30} |")
    lines.append("")
    if extra["read_file calls/s"] is not None:
        lines.append(f"read_file calls/s (sequential, SDK client over stdio): {extra['read_file calls/s']:.0f}")
        lines.append(
            f"read_file calls/s ({IN_FLIGHT} calls in flight through one SDK client session over stdio): "
            f"{extra['read_file calls/s in flight']:.0f}"
        )
    lines.append(f"server RSS after the workload (incl. 'self' searches): {extra['server RSS MiB']:.1f} MiB")
    lines.append(f"first page of the 'self' search: {extra['first page bytes']} bytes")
    return "\n".join(lines)


def _session(options: argparse.Namespace) -> int:
    from bench.corpus import big_corpus
    from bench.session_report import run_session

    corpora = [] if options.no_stdlib else [(stdlib_corpus(), "the stdlib copy")]
    corpora += [(p.resolve(), "given with --corpus") for p in options.corpus]
    if not options.no_big:
        big, note = big_corpus()
        print(f"generated tree: {note}", flush=True)
        if big is not None:
            corpora.append((big, note))
    rounds = 1 if options.quick else (options.rounds if options.rounds != 9 else 3)
    servers = [_server("as configured", options.off, options.env)]
    for spec in options.variant:
        name, _, items = spec.partition(":")
        parts = [item for item in items.split(",") if item]
        off = ",".join(filter(None, [options.off, *(p[1:] for p in parts if p.startswith("-"))]))
        servers.append(_server(name, off, [*options.env, *(p for p in parts if not p.startswith("-"))]))
    run_session(corpora, rounds, options.idle, servers)
    return 0


def _server(name: str, off: str, env: list[str]) -> Server:
    command = [sys.executable, "-m", "bench.variant", off, "--"] if off else [SESSION_SERVER]
    return Server(name, command, {**SESSION_ENV, **dict(item.split("=", 1) for item in env)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--reads", type=int, default=200, help="read_file calls per round")
    parser.add_argument("--corpus", type=Path, action="append", default=[], help="another tree to measure")
    parser.add_argument("--no-stdlib", action="store_true", help="skip the stdlib corpus")
    parser.add_argument("--quick", action="store_true", help="one round, 20 reads: a smoke test")
    parser.add_argument("--status", action="store_true", help="also print the server's status resource")
    parser.add_argument("--session", action="store_true", help="the session benchmark (bench/session.py)")
    parser.add_argument("--no-big", action="store_true", help="--session: skip the generated 100k-file tree")
    parser.add_argument("--idle", type=float, default=12.0, help="--session: seconds of idleness before the last calls")
    parser.add_argument("--off", default="", help="--session: census_memo,file_facts switched off (bench/variant.py)")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:ITEMS",
        help="--session: also a server with ITEMS (NAME=VALUE env settings, -census_memo/-file_facts switched off), "
        "measured in the same rounds and shown over the first",
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="--session: set in the server's environment"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="measure only the rows whose name (or reference's name) contains TEXT, and their references",
    )
    options = parser.parse_args(argv)
    if options.session:
        return _session(options)
    if options.quick:
        options.rounds, options.reads = 1, 20
    corpora = ([] if options.no_stdlib else [stdlib_corpus()]) + [p.resolve() for p in options.corpus]
    if not corpora:
        parser.error("no corpus: drop --no-stdlib or give --corpus")
    for corpus in corpora:
        rows, extra = anyio.run(bench, corpus, options.rounds, options.reads, options.only)
        print(render(rows, extra, corpus, options.rounds))
        if options.status:
            print(extra["status"])
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
