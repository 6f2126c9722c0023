"""The session benchmark's table: medians over rounds of each time and of each per-round ratio."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from bench import floor
from bench.session import PACE_S, STEPS, RoundResult, Server, Session


def _cell(pairs: list[tuple[float, float]]) -> str:
    if not pairs:
        return "-"
    ours = statistics.median(p[0] for p in pairs)
    ratio = statistics.median(p[0] / p[1] for p in pairs if p[1] > 0)
    return f"{ours:8.1f} ms {ratio:5.2f}x"


def render(rounds: list[RoundResult], corpus: Path, note: str, fs_note: str) -> str:
    lines = [
        f"corpus: {corpus}  ({note})",
        f"rounds: {len(rounds)}  load average: {os.getloadavg()[0]:.2f}  rg: {json.dumps(rounds[0].rg)}",
        "times are medians over rounds; ratios are medians of per-round ratios to the reference run in the same round",
        "",
        f"| {'call kind (reference)':<44} | {'cold':>17} | {'warm':>17} | {'after idle':>17} |",
        f"|{'-' * 46}|{'-' * 19}|{'-' * 19}|{'-' * 19}|",
    ]
    kinds = [step.kind for step in STEPS] + ["read_file 200 lines"]
    for kind in kinds:
        cells = [
            _cell([r.pairs[(kind, phase)] for r in rounds if (kind, phase) in r.pairs])
            for phase in ("cold", "warm", "idle")
        ]
        lines.append(f"| {kind:<44} | {cells[0]:>17} | {cells[1]:>17} | {cells[2]:>17} |")
    lines.append("")
    checking = {
        phase: statistics.median(r.checking.get(phase, 0.0) for r in rounds) for phase in ("cold", "warm", "idle")
    }
    lines.append(
        "ours: the call as the client waits for it, less the time the MCP SDK client itself spends checking the"
    )
    lines.append(
        f"result against the tool's output schema (all calls of a phase together: cold {checking['cold']:.0f} ms, "
        f"warm {checking['warm']:.0f} ms, after idle {checking['idle']:.0f} ms; a validator is compiled on each"
    )
    lines.append("tool's first call)")
    lines.append("")
    lines.append("references: search_text: rg -n [-F] [-i] (full run); search_files: rg --files -g; count_lines:")
    lines.append("rg --files -0 | xargs -0 cat | wc -l; read_file: head -n 200 (spawned); each one's output read")
    lines.append("through a pipe to its end, as an agent's tool reads it")
    lines.append("")
    for kind in rounds[0].paging:
        runs = [r.paging[kind] for r in rounds]
        ours = statistics.median(t[0] for t in runs)
        ratio = statistics.median(t[0] / t[1] for t in runs if t[1] > 0)
        validating = statistics.median(t[3] for t in runs)
        served = statistics.median((t[0] - t[3]) / t[1] for t in runs if t[1] > 0)
        lines.append(
            f"{kind}: {runs[0][2]} pages, {ours:.0f} ms together, {ratio:.2f}x one rg run; of it the SDK client "
            f"checking results against the output schema {validating:.0f} ms ({served:.2f}x without)"
        )
    ours_read = statistics.median(r.read_p50[0] for r in rounds)
    fs_reads = [r.read_p50 for r in rounds if r.read_p50[1]]
    if fs_reads:
        fs = statistics.median(p[1] or 0.0 for p in fs_reads)
        ratio = statistics.median(p[0] / (p[1] or 1.0) for p in fs_reads)
        lines.append(f"read_file 200 lines p50: {ours_read:.2f} ms; {fs_note}: {fs:.2f} ms; ratio {ratio:.2f}x")
    else:
        lines.append(f"read_file 200 lines p50: {ours_read:.2f} ms; filesystem server {fs_note}")
    lines += floor.render([r.sdk_floor for r in rounds])
    startup = statistics.median(r.startup[0] / r.startup[1] for r in rounds)
    lines.append(
        f"start-up to initialize: {statistics.median(r.startup[0] for r in rounds):.0f} ms, "
        f"{startup:.2f}x a bare MCPServer; then tools/list {statistics.median(r.list_ms for r in rounds):.0f} ms"
    )
    lines.append(
        f"peak RSS, server and children: {statistics.median(r.peak_mib for r in rounds):.1f} MiB "
        f"(max {max(r.peak_mib for r in rounds):.1f})"
    )
    paced = [r.paced for r in rounds if r.paced[1] > 0]
    if paced:
        lines.append(
            f"{STEPS[0].kind}, first call of another fresh server {PACE_S:.0f} s after tools/list (as after a model's "
            f"first turn): {statistics.median(p[0] for p in paced):.1f} ms "
            f"{statistics.median(p[0] / p[1] for p in paced):.2f}x"
        )
    first = rounds[0].pairs
    never = [
        f"{kind} {first[(kind, 'cold')][0]:.1f} ms {first[(kind, 'cold')][0] / first[(kind, 'cold')][1]:.2f}x"
        for kind in (STEPS[0].kind, STEPS[8].kind)
        if (kind, "cold") in first and first[(kind, "cold")][1] > 0
    ]
    lines.append(
        "cold: each round's server starts with the file facts the previous round's kept ([workspace] facts_cache); "
        f"round 1, with none: {'; '.join(never)}"
    )
    lines.append(f"search state at the end of the last round: {json.dumps(rounds[-1].index)}")
    errors = [error for r in rounds for error in r.errors]
    lines.append(f"calls answered with an error: {len(errors)}" + "".join(f"\n  {e}" for e in errors))
    return "\n".join(lines)


def render_variant(name: str, rounds: list[RoundResult], base: list[RoundResult]) -> str:
    """The variant's times over the first server's, per call kind: the median over rounds of the ratio of the
    two ratios to the reference each one was measured with (below 1: the variant is faster)."""

    def over(kind: str, phase: str) -> str:
        ratios = [
            (r.pairs[(kind, phase)][0] / r.pairs[(kind, phase)][1])
            / (b.pairs[(kind, phase)][0] / b.pairs[(kind, phase)][1])
            for r, b in zip(rounds, base, strict=True)
            if (kind, phase) in r.pairs and (kind, phase) in b.pairs
        ]
        return f"{statistics.median(ratios):.2f}x" if ratios else "-"

    lines = [f"variant '{name}' over the first: cold / warm / after idle"]
    for kind in [step.kind for step in STEPS] + ["read_file 200 lines"]:
        lines.append(f"  {kind:<40} {over(kind, 'cold'):>7} {over(kind, 'warm'):>7} {over(kind, 'idle'):>7}")
    for kind in rounds[0].paging:
        ratios = [
            (r.paging[kind][0] / r.paging[kind][1]) / (b.paging[kind][0] / b.paging[kind][1])
            for r, b in zip(rounds, base, strict=True)
        ]
        lines.append(f"  {kind:<40} {statistics.median(ratios):.2f}x")
    paced = [
        (r.paced[0] / r.paced[1]) / (b.paced[0] / b.paced[1])
        for r, b in zip(rounds, base, strict=True)
        if r.paced[1] > 0 and b.paced[0] > 0 and b.paced[1] > 0
    ]
    lines.append(f"  {'first search_text after the pause':<40} {statistics.median(paced) if paced else 0:.2f}x")
    peak, base_peak = statistics.median(r.peak_mib for r in rounds), statistics.median(b.peak_mib for b in base)
    lines.append(f"  peak RSS {peak:.0f} MiB (first: {base_peak:.0f} MiB); errors {sum(len(r.errors) for r in rounds)}")
    return "\n".join(lines)


async def _rounds(session: Session, count: int) -> list[dict[str, RoundResult]]:
    return [await session.round() for _ in range(count)]


def run_session(corpora: list[tuple[Path, str]], rounds: int, idle_s: float, servers: list[Server]) -> None:
    """Run and print the session benchmark on each corpus, for each server variant (the first is the table)."""
    started = time.monotonic()
    for corpus, note in corpora:
        with tempfile.TemporaryDirectory(prefix="repo-sandbox-bench-facts-") as caches:
            # each variant keeps its file facts in a cache of its own, empty before round 1
            session = Session(
                corpus,
                [
                    Server(v.name, [*v.command, "--root", str(corpus)], {**v.env, "XDG_CACHE_HOME": f"{caches}/{n}"})
                    for n, v in enumerate(servers)
                ],
                idle_s,
            )
            results = anyio.run(_rounds, session, rounds)
        base = [r[servers[0].name] for r in results]
        print(render(base, corpus, note, session.fs_note), flush=True)
        for server in servers[1:]:
            print(render_variant(server.name, [r[server.name] for r in results], base), flush=True)
        print(flush=True)
    print(f"session benchmark took {time.monotonic() - started:.0f} s")
