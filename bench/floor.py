"""The Python SDK's own floor for the session's calls: the same questions put to a bare MCPServer
(`floor_server.py`: no policy, no jail, no masking) through the same SDK client, each paired with the same
reference run. A ratio of ours that sits at the floor's is the SDK's cost (its server and its client), not
the policy's; the gap between the two is what the server itself adds.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench.timing import CheckClock, ms, paired_median

FLOOR_SERVER = str(Path(__file__).with_name("floor_server.py"))


@dataclass
class Floor:
    read_p50: float = 0.0
    """`head` of the read_file target's 200 lines, p50 ms."""
    paging: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Every page of the large search_files listing: (ms together, one reference run ms, ms of it the client
    spent checking results against the output schema)."""
    searches: dict[str, tuple[float, float]] = field(default_factory=dict[str, tuple[float, float]])
    """search_text kind -> (ms without the client's checking, reference ms): medians of the warm calls."""


async def measure(
    corpus: Path,
    rg: str,
    *,
    read_rel: str,
    reads: int,
    files_glob: str,
    files_reference: list[str],
    searches: Sequence[tuple[str, dict[str, Any], list[str]]],
    reference: Callable[[list[str]], Awaitable[float]],
    warm_calls: int,
) -> Floor:
    """`searches`: (kind, search_text arguments, reference argv) of each search kind, each called `warm_calls`
    times after a first call."""
    out = Floor()
    root = str(corpus)
    async with Client(StdioServerParameters(command=sys.executable, args=[FLOOR_SERVER, rg]), mode="legacy") as bare:
        clock = CheckClock(bare)
        path = str(corpus / read_rel)
        out.read_p50 = statistics.median(
            [await ms(lambda: bare.call_tool("head", {"path": path, "lines": 200})) for _ in range(reads)]
        )
        offset: int | None = 0
        clock.take_ms()
        start = time.perf_counter()
        while offset is not None:
            page = await bare.call_tool("files", {"root": root, "glob": files_glob, "offset": offset, "limit": 1000})
            offset = (page.structured_content or {}).get("next_offset")
        out.paging = ((time.perf_counter() - start) * 1000, await reference(files_reference), clock.take_ms())
        for kind, arguments, argv in searches:
            grep = {
                "root": root,
                "pattern": arguments["pattern"],
                "fixed": arguments.get("fixed_strings", False),
                "icase": not arguments.get("case_sensitive", True),
                "limit": arguments.get("limit", 100),
            }
            await bare.call_tool("grep", grep)  # the first call of a kind compiles the client's validator
            took, ref, _ = await paired_median(
                lambda g=grep: bare.call_tool("grep", g), lambda a=argv: reference(a), clock, warm_calls
            )
            out.searches[kind] = (took, ref)
    return out


def _ratio(pairs: Sequence[tuple[float, float]]) -> float:
    return statistics.median(ours / ref for ours, ref in pairs if ref > 0)


def render(floors: Sequence[Floor]) -> list[str]:
    """The floor's lines of the report: medians over rounds, as the rest of the table."""
    paging = [f.paging for f in floors]
    together = statistics.median(p[0] for p in paging)
    ratio, unchecked = _ratio([(p[0], p[1]) for p in paging]), _ratio([(p[0] - p[2], p[1]) for p in paging])
    lines = [
        "the Python SDK's floor (a bare MCPServer, no policy, through the same client, same references):",
        (
            f"  every page of search_files' listing (one rg --files run, then slices of it): {together:.0f} ms "
            f"together, {ratio:.2f}x one rg run ({unchecked:.2f}x without the client's checking)"
        ),
    ]
    kinds = list(floors[0].searches)
    if kinds:
        cells = [
            f"{kind.removeprefix('search_text ')} {_ratio([f.searches[kind] for f in floors]):.2f}x" for kind in kinds
        ]
        lines.append("  search_text warm, rg run then its first matches returned: " + ", ".join(cells))
    lines.append(f"  read_file's 200 lines (`head`): p50 {statistics.median(f.read_p50 for f in floors):.2f} ms")
    return lines
