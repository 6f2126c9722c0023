"""A bounded soak on loopback: the real server (`repo-sandbox serve --transport http`) on 127.0.0.1, N client
sessions doing mixed tool calls until the duration ends, over Streamable HTTP (both protocol eras) and
WebSocket (both eras; token in the header or in `?token=`, alternately).

Prints, every --sample-s seconds, the server's RSS, open descriptors, threads and child processes; at the
end calls/s, p50/p95/p99 per tool, graded errors and transport failures by code, internal errors, where
execute_bash time goes (the sandboxed run as the result reports it, and the rest), and the child processes
that outlived the server. The server is stopped with SIGTERM, as an operator would.

    scripts/soak [--sessions 40] [--duration 120] [--mix http-2025-11-25=1,...] [--tools ...] [--corpus DIR]

The default corpus is a git copy of this interpreter's stdlib, made once in ~/.cache/repo-sandbox-bench.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench.corpus import cache_dir, stdlib_corpus
from bench.procstat import ProcessSample, descendants, sample
from bench.soakclient import KINDS, connect, server_status

MAX_DURATION_S = 3600.0
TOKEN = "soak-token-" + os.urandom(12).hex()
PACKAGES = ("json", "email", "asyncio", "http", "xml", "unittest", "logging", "concurrent", "importlib", "urllib")
READ_TARGETS = ("argparse.py", "json/decoder.py", "email/message.py", "asyncio/events.py", "logging/__init__.py")


def git_corpus() -> Path:
    """The stdlib copy as a git repository with one commit (execute_bash runs git in it)."""
    source = stdlib_corpus()
    target = cache_dir() / (source.name + "-git")
    if (target / ".complete-git").exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial, symlinks=True, ignore=lambda _, names: [n for n in names if n == ".complete"])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(partial), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=soak", "-c", "user.email=s@x", "commit", "-qm", "stdlib"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=partial, env=env, check=True, capture_output=True)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    (target / ".git" / "info" / "exclude").write_text(".complete-git\n")
    (target / ".complete-git").write_text("")
    return target


def calls_for(session: int, tools: list[str], git: bool) -> list[tuple[str, dict[str, Any]]]:
    """The cycle of calls one session repeats: each tool in `tools` with arguments varied by session."""
    package, target = PACKAGES[session % len(PACKAGES)], READ_TARGETS[session % len(READ_TARGETS)]
    command = "git log --oneline -n 3" if git and session % 2 else f"grep -c import {target}"
    every = {
        "search_text": ("search_text", {"pattern": "def __init__", "path": package, "limit": 20}),
        "read_file": ("read_file", {"path": target, "offset": 1 + session % 50, "limit": 50}),
        "search_files": ("search_files", {"pattern": "*.py", "path": package, "limit": 50}),
        "count_lines": ("count_lines", {"path": package}),
        "execute_bash": ("execute_bash", {"command": command}),
        "denied": ("read_file", {"path": "../outside.txt"}),  # a graded error is an answer, not a failure
    }
    return [every[name] for name in tools]


@dataclass
class Tally:
    latencies_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    exec_call_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    exec_run_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    graded: Counter[str] = field(default_factory=Counter[str])
    failures: Counter[str] = field(default_factory=Counter[str])
    sessions_done: int = 0
    samples: list[ProcessSample] = field(default_factory=list[ProcessSample])
    children_seen: dict[int, str] = field(default_factory=dict[int, str])


async def run_session(url: str, index: int, kind: str, calls: list[tuple[str, dict[str, Any]]], deadline: float, tally: Tally) -> None:  # fmt: skip
    try:
        async with connect(url, TOKEN, kind, query_token=index % 2 == 1) as client:
            step = 0
            while time.monotonic() < deadline:
                name, arguments = calls[step % len(calls)]
                step += 1
                started = time.perf_counter()
                result = await client.call_tool(name, arguments)
                elapsed_ms = (time.perf_counter() - started) * 1000
                tally.latencies_ms[name].append(elapsed_ms)
                content = result.structured_content or {}
                if result.is_error:
                    tally.graded[f"{name}:{content.get('error', {}).get('code', '?')}"] += 1
                elif name == "execute_bash" and "duration_ms" in content:
                    program = arguments["command"].split()[0]
                    tally.exec_call_ms[program].append(elapsed_ms)
                    tally.exec_run_ms[program].append(float(content["duration_ms"]))
        tally.sessions_done += 1
    except Exception as exc:  # noqa: BLE001  # every failure is counted and reported
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:  # pyright: ignore[reportUnknownMemberType]
            exc = exc.exceptions[0]  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
        tally.failures[f"{kind}: {type(exc).__name__}: {str(exc)[:160]}"] += 1  # pyright: ignore[reportUnknownArgumentType]


async def sampler(pid: int, every_s: float, deadline: float, tally: Tally, started: float) -> None:
    while True:
        current = sample(pid)
        if current is None:
            return
        tally.samples.append(current)
        for child, name in descendants(pid).items():
            tally.children_seen.setdefault(child, name)
        print(
            f"  t={current.at - started:6.0f}s rss={current.rss_mb:6.1f} MB fds={current.fds:4d} "
            f"threads={current.threads:3d} children={current.children:3d}",
            flush=True,
        )
        if time.monotonic() >= deadline:
            return
        await anyio.sleep(every_s)


def alive(pid: int, name: str) -> bool:
    """Whether `pid` still runs `name` (not a later process given the same pid)."""
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip() == name
    except OSError:
        return False


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else float("nan")


def parse_mix(text: str) -> list[str]:
    weights: list[tuple[str, int]] = []
    for part in text.split(","):
        kind, _, weight = part.partition("=")
        if kind not in KINDS:
            raise SystemExit(f"soak: unknown session kind {kind!r} (one of {', '.join(KINDS)})")
        weights.append((kind, int(weight or 1)))
    return [kind for kind, weight in weights for _ in range(weight)]


def start_server(root: Path, log: Path, server_args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPO_SANDBOX_")} | {"REPO_SANDBOX_TOKEN": TOKEN}
    command = [sys.executable, "-m", "repo_sandbox", "serve", "--transport", "http", "--host", "127.0.0.1"]
    command += ["--port", "0", "--root", str(root), "--log-level", "WARNING", *server_args]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if "listening on http://" in line:
                return process, line.rsplit(" ", 1)[-1]
        if process.poll() is not None:
            raise SystemExit(f"soak: the server exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)
    process.kill()
    raise SystemExit("soak: the server did not start within 60 s")


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    root = args.corpus or git_corpus()
    git = (root / ".git").exists()
    kinds = parse_mix(args.mix)
    tools = args.tools.split(",")
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="repo-sandbox-soak-") as scratch:
        log = Path(scratch) / "server.log"
        process, url = start_server(root, log, args.server_arg)
        try:
            print(f"soak: {args.sessions} sessions for {args.duration:.0f} s against {root} at {url} (pid {process.pid})", flush=True)  # fmt: skip
            started = time.monotonic()
            deadline = started + args.duration
            async with anyio.create_task_group() as tg:
                tg.start_soon(sampler, process.pid, args.sample_s, deadline, tally, started)
                for index in range(args.sessions):
                    kind = kinds[index % len(kinds)]
                    calls = calls_for(index, tools, git)
                    tg.start_soon(run_session, url, index, kind, calls, deadline, tally)
            wall_s = time.monotonic() - started
            await anyio.sleep(2)  # sessions closed: what is still running now was left behind
            with anyio.fail_after(60):
                status = await server_status(url, TOKEN)
            final = sample(process.pid)
            if final is not None:
                tally.samples.append(final)
            lingering = descendants(process.pid)
        finally:
            stop_started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            try:
                exit_code = process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                exit_code = process.wait()
            stop_s = time.monotonic() - stop_started
        server_log = log.read_text(errors="replace")
    await anyio.sleep(0.5)
    outlived = {pid: name for pid, name in tally.children_seen.items() if alive(pid, name)}
    summary = summarise(args, tally, wall_s, lingering, outlived, exit_code, stop_s, server_log)
    summary["server_caches"] = {"search": status.get("search"), "tree_index": status.get("tree_index")}
    return summary


def summarise(
    args: argparse.Namespace, tally: Tally, wall_s: float, lingering: dict[int, str], outlived: dict[int, str],
    exit_code: int, stop_s: float, server_log: str,
) -> dict[str, Any]:  # fmt: skip
    every = [value for values in tally.latencies_ms.values() for value in values]
    samples = tally.samples
    return {
        "sessions": args.sessions,
        "sessions_to_the_end": tally.sessions_done,
        "mix": args.mix,
        "tools": args.tools,
        "duration_s": round(wall_s, 1),
        "calls": len(every),
        "calls_per_s": round(len(every) / wall_s, 1) if wall_s else 0,
        "latency_ms_by_tool": {
            name: {
                "calls": len(values),
                "p50": round(percentile(values, 0.5), 1),
                "p95": round(percentile(values, 0.95), 1),
                "p99": round(percentile(values, 0.99), 1),
            }
            for name, values in sorted(tally.latencies_ms.items())
        },
        "execute_bash_ms_by_program": {
            program: {
                "calls": len(calls),
                "call_p50": round(percentile(calls, 0.5), 1),
                "call_p99": round(percentile(calls, 0.99), 1),
                "sandboxed_run_p50": round(percentile(tally.exec_run_ms[program], 0.5), 1),
                "sandboxed_run_p99": round(percentile(tally.exec_run_ms[program], 0.99), 1),
            }
            for program, calls in sorted(tally.exec_call_ms.items())
        },
        "graded_errors": dict(tally.graded),
        "internal_errors": sum(n for key, n in tally.graded.items() if key.endswith(":internal_error")),
        "transport_failures": dict(tally.failures),
        "rss_mb": [round(s.rss_mb, 1) for s in samples],
        "fds": [s.fds for s in samples],
        "threads": [s.threads for s in samples],
        "children": [s.children for s in samples],
        "sample_s": args.sample_s,
        "children_after_sessions": lingering,
        "children_outliving_server": outlived,
        "server_exit_code": exit_code,
        "server_stop_s": round(stop_s, 2),
        "server_log_tracebacks": server_log.count("Traceback"),
    }


def print_summary(summary: dict[str, Any]) -> None:
    print(f"\ncalls: {summary['calls']} in {summary['duration_s']} s = {summary['calls_per_s']}/s; "
          f"sessions to the end: {summary['sessions_to_the_end']}/{summary['sessions']}")  # fmt: skip
    print(f"{'tool':14} {'calls':>7} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9}")
    for name, row in summary["latency_ms_by_tool"].items():
        print(f"{name:14} {row['calls']:7d} {row['p50']:9.1f} {row['p95']:9.1f} {row['p99']:9.1f}")
    for program, row in summary["execute_bash_ms_by_program"].items():
        print(f"execute_bash {program}: call p50 {row['call_p50']} ms (p99 {row['call_p99']}), of which the "
              f"sandboxed run (spawn to exit) p50 {row['sandboxed_run_p50']} ms (p99 {row['sandboxed_run_p99']})")  # fmt: skip
    print(f"graded errors: {summary['graded_errors']}; internal errors: {summary['internal_errors']}")
    print(f"transport failures: {summary['transport_failures'] or 'none'}")
    for key in ("rss_mb", "fds", "threads", "children"):
        values = summary[key]
        print(f"{key:8} first {values[0] if values else '-'} min {min(values, default='-')} max {max(values, default='-')} last {values[-1] if values else '-'}")  # fmt: skip
    print(f"children left after the sessions: {summary['children_after_sessions'] or 'none'}; "
          f"outliving the server: {summary['children_outliving_server'] or 'none'}")  # fmt: skip
    search = summary["server_caches"]["search"] or {}
    print(f"server caches at the end: search {json.dumps(search)[:600]}")
    print(f"server: SIGTERM -> exit {summary['server_exit_code']} in {summary['server_stop_s']} s; "
          f"tracebacks in its log: {summary['server_log_tracebacks']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="scripts/soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--duration", type=float, default=120.0, help=f"seconds (at most {MAX_DURATION_S:.0f})")
    parser.add_argument("--mix", default=",".join(KINDS), help="session kinds with weights, e.g. http-2025-11-25=2,ws-2026-07-28=1")  # fmt: skip
    parser.add_argument("--tools", default="search_text,read_file,search_files,count_lines,execute_bash,denied")
    parser.add_argument("--corpus", type=Path, help="the tree to serve (default: a git copy of the stdlib)")
    parser.add_argument("--sample-s", type=float, default=10.0, help="seconds between process samples")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    parser.add_argument("--server-arg", action="append", default=[], help="passed to `repo-sandbox serve`")
    args = parser.parse_args()
    if not 0 < args.duration <= MAX_DURATION_S or args.sessions < 1:
        parser.error(f"--duration must be in (0, {MAX_DURATION_S:.0f}] and --sessions at least 1")
    summary = anyio.run(soak, args)
    print_summary(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
