"""`repo-sandbox audit tail|stats FILE...`: the audit log made readable for a person.

Reads JSONL files as the audit writes them (rotated files can be given too, oldest first). Lines that are
not JSON objects are counted, not fatal.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from repo_sandbox.audit.events import CALL_EVENT, DECISION_EVENT

Event = dict[str, Any]


def read_events(paths: Iterable[str | Path]) -> tuple[list[Event], int]:
    """Every event of the files in order, and the number of lines that were not JSON objects."""
    events: list[Event] = []
    unreadable = 0
    for path in paths:
        with Path(path).open("r", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    unreadable += 1
                    continue
                if isinstance(event, dict):
                    events.append(event)  # pyright: ignore[reportUnknownArgumentType]
                else:
                    unreadable += 1
    return events, unreadable


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= width else text[: width - 1] + "…"


def _size(count: Any) -> str:
    if not isinstance(count, int | float):
        return "-"
    if count < 1024:
        return f"{int(count)} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / 1024 / 1024:.1f} MiB"


def format_event(event: Event) -> str:
    """One line per event: time, session, what happened."""
    head = f"{event.get('ts', '?'):<24}  {str(event.get('session') or '-')[:16]:<16}"
    if event.get("event") == DECISION_EVENT:
        rule = f"  rule={event['rule']}" if event.get("rule") else ""
        details = f"  {_short(event.get('details') or {}, 80)}"
        return f"{head}  {'decision':<14}{event.get('decision')!s:<7}{event.get('kind')}{rule}{details}"
    outcome = str(event.get("outcome", "?"))
    if event.get("error_code"):
        outcome += f" {event['error_code']}"
    duration = event.get("duration_ms")
    took = f"{duration:9.1f} ms" if isinstance(duration, int | float) else "        - ms"
    extra = f"  masked={event['redactions']}" if event.get("redactions") else ""
    return (
        f"{head}  {event.get('tool')!s:<14}{took}  {_size(event.get('output_bytes')):>9}  {outcome}{extra}  "
        f"{_short(event.get('arguments'), 80)}"
    )


def format_tail(events: Sequence[Event], count: int) -> str:
    return "\n".join(format_event(event) for event in events[-count:] if count > 0)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def compute_stats(events: Sequence[Event], unreadable: int = 0, *, slowest: int = 10) -> dict[str, Any]:
    """Calls, errors and time per tool; errors by code; the slowest calls; decisions by kind."""
    calls = [e for e in events if e.get("event") == CALL_EVENT]
    durations: dict[str, list[float]] = defaultdict(list)
    per_tool: dict[str, dict[str, Any]] = {}
    for event in calls:
        if event.get("outcome") == "input_required":  # the paused round of a call whose retry is counted
            continue
        tool = str(event.get("tool"))
        row = per_tool.setdefault(tool, {"calls": 0, "errors": 0, "output_bytes": 0})
        row["calls"] += 1
        row["errors"] += event.get("outcome") != "ok"
        row["output_bytes"] += event.get("output_bytes") or 0
        if isinstance(event.get("duration_ms"), int | float):
            durations[tool].append(float(event["duration_ms"]))
    for tool, values in durations.items():
        per_tool[tool] |= {
            "mean_ms": round(sum(values) / len(values), 3),
            "p95_ms": round(_percentile(values, 0.95), 3),
            "max_ms": round(max(values), 3),
        }
    timed = [e for e in calls if isinstance(e.get("duration_ms"), int | float)]
    timed.sort(key=lambda e: e["duration_ms"], reverse=True)
    stamps = [str(e["ts"]) for e in events if e.get("ts")]
    return {
        "events": len(events),
        "tool_calls": len(calls),
        "policy_decisions": sum(e.get("event") == DECISION_EVENT for e in events),
        "unreadable_lines": unreadable,
        "sessions": len({e.get("session") for e in calls}),
        "first": min(stamps) if stamps else None,
        "last": max(stamps) if stamps else None,
        "per_tool": dict(sorted(per_tool.items())),
        "errors_by_code": dict(Counter(str(e.get("error_code")) for e in calls if e.get("error_code")).most_common()),
        "decisions": dict(
            Counter(
                f"{e.get('kind')} ({e.get('decision')})" for e in events if e.get("event") == DECISION_EVENT
            ).most_common()
        ),
        "slowest": timed[:slowest],
    }


def format_stats(stats: dict[str, Any]) -> str:
    lines = [
        (
            f"events: {stats['events']} ({stats['tool_calls']} tool calls, {stats['policy_decisions']} policy "
            f"decisions), {stats['unreadable_lines']} unreadable lines"
        ),
        f"sessions: {stats['sessions']}   from {stats['first'] or '-'} to {stats['last'] or '-'}",
        "",
        f"{'calls per tool':<20}{'calls':>7}{'errors':>8}{'mean ms':>10}{'p95 ms':>10}{'max ms':>10}{'output':>12}",
    ]
    for tool, row in stats["per_tool"].items():
        lines.append(
            f"{tool:<20}{row['calls']:>7}{row['errors']:>8}{row.get('mean_ms', 0):>10.1f}{row.get('p95_ms', 0):>10.1f}"
            f"{row.get('max_ms', 0):>10.1f}{_size(row['output_bytes']):>12}"
        )
    lines += ["", "errors by code"]
    lines += [f"  {code:<28}{count:>6}" for code, count in stats["errors_by_code"].items()] or ["  (none)"]
    lines += ["", "slowest calls"]
    lines += [f"  {format_event(event)}" for event in stats["slowest"]] or ["  (none)"]
    if stats["decisions"]:
        lines += ["", "policy decisions"]
        lines += [f"  {kind:<40}{count:>6}" for kind, count in stats["decisions"].items()]
    return "\n".join(lines)
