"""The session benchmark: what an agent meets, call by call, on a fresh server (`scripts/bench --session`).

Each round spawns a fresh server and makes the same scripted session through the MCP SDK client over stdio:
initialize and tools/list (as every client does first), every call kind once on the fresh server (cold), five
more times (warm), every page of one large search_files and one large search_text, read_file 200 lines
repeatedly beside the official filesystem server, then after `idle_s` of silence (an agent thinking) a few more
calls. A second fresh server then gets its first search `PACE_S` after tools/list, as at an agent's pace.
Each call is paired, in random order, with its reference run in the same round (the same rg binary the
server uses, `rg --files`, `head -n`, `wc -l`), so a busy machine slows both sides of a ratio alike; a cold
call is paired with a reference run just before the server started (the second of two), on the quiet machine
an agent's own rg would meet (beside a fresh server, a reference shares the machine with the server's start-up
work). A separate process samples the memory of the server and its children.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench import floor
from bench.corpus import pick_read_target
from bench.procs import PeakRss, fs_server, server_pid, server_rg
from bench.timing import CheckClock, checked_ms, ms, paired_median

SERVER = str(Path(sys.executable).with_name("repo-sandbox"))
BARE = str(Path(__file__).with_name("bare_server.py"))
SERVER_ENV = {
    **os.environ,
    "REPO_SANDBOX_GUARD_REPEAT_THRESHOLD": "1000",
    "REPO_SANDBOX_BUDGET_MAX_CALLS": "0",
    "REPO_SANDBOX_BUDGET_MAX_OUTPUT_BYTES": "0",
}
READS = 30
"""read_file calls per round for the p50 (ours and the filesystem server's alike)."""
WARM_CALLS = 5
"""Warm calls of each kind per round, each paired with its reference: a round's warm row is their median."""
PACE_S = 3.0
"""The pause before the first call of a second fresh server each round: a model's first turn, at least."""


@dataclass(frozen=True)
class Step:
    kind: str
    tool: str
    arguments: dict[str, Any]


def _search(pattern: str, *, fixed: bool = False, icase: bool = False, limit: int = 100) -> dict[str, Any]:
    return {"pattern": pattern, "fixed_strings": fixed, "case_sensitive": not icase, "limit": limit}


STEPS = [
    Step("search_text rare literal", "search_text", _search("PYTHONHASHSEED", fixed=True)),
    Step("search_text common literal", "search_text", _search("self", fixed=True)),
    Step("search_text regex, no literal", "search_text", _search(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")),
    Step("search_text word, -i", "search_text", _search(r"\bdeprecated\b", icase=True)),
    Step("search_text alternation", "search_text", _search(r"\b(TODO|FIXME|XXX)\b")),
    Step("search_text no hit", "search_text", _search("zqxj_no_such_token", fixed=True)),
    Step("search_text non-ASCII", "search_text", _search("Löwis", fixed=True)),
    Step("search_files *.py", "search_files", {"pattern": "**/*.py", "limit": 1000}),
    Step("count_lines .", "count_lines", {"path": "."}),
]
AFTER_IDLE = [STEPS[0], STEPS[2], STEPS[3], STEPS[7], STEPS[8]]
PAGED_TEXT = _search(r"class \w+Error\(", limit=1000)


def reference(step: Step | str, rg: str, rel: str) -> list[str]:
    """The command line an agent without this server would run for the same answer."""
    if isinstance(step, str):
        return ["head", "-n", "200", rel]
    if step.tool == "search_files":
        return [rg, "--files", "-g", step.arguments["pattern"], "."]
    if step.tool == "count_lines":
        return ["sh", "-c", f"'{rg}' --files -0 . | xargs -0 cat | wc -l"]
    args = step.arguments
    flags = (["-F"] if args["fixed_strings"] else []) + ([] if args["case_sensitive"] else ["-i"])
    return [rg, "-n", *flags, "--", args["pattern"], "."]


@dataclass
class RoundResult:
    pairs: dict[tuple[str, str], tuple[float, float]] = field(
        default_factory=dict[tuple[str, str], tuple[float, float]]
    )
    """(kind, phase) -> (ours ms, reference ms); phase is cold, warm or idle. Ours leaves out the time the SDK
    client spent checking the result against the tool's output schema (`checking`)."""
    checking: dict[str, float] = field(default_factory=dict[str, float])
    """phase -> ms the SDK client spent checking results against output schemas (compiling each tool's
    validator on its first call, then validating)."""
    startup: tuple[float, float] = (0.0, 0.0)
    """(ours, bare MCPServer) spawn -> initialize answered, ms."""
    list_ms: float = 0.0
    """tools/list right after initialize, as every client does before its first call."""
    paging: dict[str, tuple[float, float, int, float]] = field(
        default_factory=dict[str, tuple[float, float, int, float]]
    )
    """kind -> (every page together ms, one reference run ms, pages, ms of it the SDK client spent checking
    results against the output schema)."""
    read_p50: tuple[float, float | None] = (0.0, None)
    """(ours, filesystem server) read_file 200 lines p50 ms."""
    sdk_floor: floor.Floor = field(default_factory=floor.Floor)
    """The same calls through a bare MCPServer: the Python SDK's own floor."""
    paced: tuple[float, float] = (0.0, 0.0)
    """(ours, reference) ms: the first search_text of another fresh server, made `PACE_S` after tools/list."""
    peak_mib: float = 0.0
    errors: list[str] = field(default_factory=list[str])
    """Calls answered with an error (a timeout on a busy machine, say): the kind and the error code."""
    index: dict[str, Any] = field(default_factory=dict[str, Any])
    rg: dict[str, Any] = field(default_factory=dict[str, Any])


def _run(argv: list[str], cwd: Path) -> None:
    """Run a reference and read its output to the end, as an agent's tool reads it. Not into /dev/null, where
    rg's writes cost almost nothing (`rg -n self` on the stdlib: 40 ms, against 60 ms into a pipe that is read)."""
    with subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        while os.read(process.stdout.fileno(), 1 << 20):
            pass


async def _spawn_ms(command: str, args: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    async with Client(StdioServerParameters(command=command, args=args, env=env), mode="legacy"):
        return (time.perf_counter() - start) * 1000


@dataclass(frozen=True)
class Server:
    name: str
    command: list[str]
    env: dict[str, str]


class Session:
    """One corpus, one or more server variants: each round runs the whole session once per variant (in a new
    random order each round, so that a machine's load drifting over minutes falls on all of them alike)."""

    def __init__(self, corpus: Path, servers: list[Server], idle_s: float) -> None:
        self.corpus, self.servers, self.idle_s = corpus, servers, idle_s
        self.rg = server_rg()
        self.rel = str(pick_read_target(corpus).relative_to(corpus))
        self.fs, self.fs_note = fs_server()

    async def _ref(self, argv: list[str]) -> float:
        return await ms(lambda: anyio.to_thread.run_sync(_run, argv, self.corpus))

    async def _paired(
        self, call: Any, argv: list[str], clock: CheckClock, times: int = 1
    ) -> tuple[float, float, float]:
        """(ours without the client's checking, reference, the client's checking) ms; medians of `times` pairs."""
        return await paired_median(call, lambda: self._ref(argv), clock, times)

    async def _pages(
        self, client: Client, tool: str, arguments: dict[str, Any], errors: list[str], clock: CheckClock
    ) -> tuple[float, int, float]:
        """(ms for every page, pages, ms of it the SDK client spent checking results against the output schema)."""
        offset: int | None = 0
        pages, start = 0, time.perf_counter()
        clock.take_ms()
        while offset is not None:
            result = await client.call_tool(tool, {**arguments, "offset": offset})
            content = result.structured_content or {}
            if result.is_error:
                errors.append(f"{tool} page {pages + 1}: {content.get('error', {}).get('code')}")
                break
            offset, pages = content.get("next_offset"), pages + 1
        return (time.perf_counter() - start) * 1000, pages, clock.take_ms()

    async def _fs_read_p50(self) -> float | None:
        if self.fs is None:
            return None
        path = str(self.corpus / self.rel)
        quiet = ["-c", 'exec "$0" "$1" 2>/dev/null', self.fs, str(self.corpus)]  # it greets on stderr
        async with Client(StdioServerParameters(command="sh", args=quiet), mode="legacy") as fs:
            samples = [
                await ms(lambda: fs.call_tool("read_text_file", {"path": path, "head": 200})) for _ in range(READS)
            ]
        return statistics.median(samples)

    async def round(self) -> dict[str, RoundResult]:
        order = list(self.servers)
        random.shuffle(order)
        return {server.name: await self._session(server) for server in order}

    async def _session(self, server: Server) -> RoundResult:
        with PeakRss() as peak:  # its own start-up is over before the quiet references run
            out = await self._timed_session(server, peak)
        out.peak_mib = peak.peak_mib
        out.paced = await self._paced_first(server, out.errors)
        return out

    async def _paced_first(self, server: Server, errors: list[str]) -> tuple[float, float]:
        """(ours without the client's checking, reference) ms for the first search_text of a fresh server made
        `PACE_S` after tools/list, as an agent's first search comes after its model's first turn."""
        step = STEPS[0]
        argv = reference(step, self.rg, "")
        await self._ref(argv)
        quiet = await self._ref(argv)
        params = StdioServerParameters(command=server.command[0], args=server.command[1:], env=server.env)
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            await anyio.sleep(PACE_S)

            async def call() -> None:
                if (await client.call_tool(step.tool, step.arguments)).is_error:
                    errors.append(f"{step.tool} {json.dumps(step.arguments)} after the pause")

            took, _ = await checked_ms(call, CheckClock(client))
        return took, quiet

    async def _timed_session(self, server: Server, peak: PeakRss) -> RoundResult:
        out = RoundResult()
        kinds = [(step.kind, step.tool, step.arguments, reference(step, self.rg, "")) for step in STEPS]
        read = {"path": self.rel, "offset": 1, "limit": 200}
        kinds.append(("read_file 200 lines", "read_file", read, reference("read", self.rg, self.rel)))
        quiet: dict[str, float] = {}
        for kind, _, _, argv in kinds:  # before the server starts; the second run, as the machine's first is slow
            await self._ref(argv)
            quiet[kind] = await self._ref(argv)
        bare = await _spawn_ms(sys.executable, [BARE])
        start = time.perf_counter()
        params = StdioServerParameters(command=server.command[0], args=server.command[1:], env=server.env)
        async with Client(params, mode="legacy") as client:
            out.startup = ((time.perf_counter() - start) * 1000, bare)
            out.list_ms = await ms(client.list_tools)
            clock = CheckClock(client)
            pid = server_pid("--root")
            assert pid is not None, "bench: the server process was not found"
            peak.watch(pid)

            async def call(tool: str, arguments: dict[str, Any]) -> None:
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    error = (result.structured_content or {}).get("error", {}).get("code")
                    out.errors.append(f"{tool} {json.dumps(arguments)}: {error}")

            out.checking["cold"] = out.checking["warm"] = 0.0
            for kind, tool, arguments, _ in kinds:
                took, checking = await checked_ms(lambda t=tool, a=arguments: call(t, a), clock)
                out.pairs[(kind, "cold")] = (took, quiet[kind])
                out.checking["cold"] += checking
            for kind, tool, arguments, argv in kinds:
                took, ref, checking = await self._paired(
                    lambda t=tool, a=arguments: call(t, a), argv, clock, WARM_CALLS
                )
                out.pairs[(kind, "warm")] = (took, ref)
                out.checking["warm"] += checking
            for kind, tool, arguments, argv in (
                (
                    "search_files *.py, every page",
                    "search_files",
                    STEPS[7].arguments,
                    reference(STEPS[7], self.rg, ""),
                ),
                (
                    "search_text class \\w+Error\\(, every page",
                    "search_text",
                    PAGED_TEXT,
                    [self.rg, "-n", "--sort", "path", "--", PAGED_TEXT["pattern"], "."],
                ),
            ):
                ours, pages, validating = await self._pages(client, tool, arguments, out.errors, clock)
                out.paging[kind] = (ours, await self._ref(argv), pages, validating)
            ours_reads = [await ms(lambda: call("read_file", read)) for _ in range(READS)]  # checked, as theirs
            out.read_p50 = (statistics.median(ours_reads), await self._fs_read_p50())
            out.sdk_floor = await floor.measure(
                self.corpus,
                self.rg,
                read_rel=self.rel,
                reads=READS,
                files_glob=STEPS[7].arguments["pattern"],
                files_reference=reference(STEPS[7], self.rg, ""),
                searches=[(s.kind, s.arguments, reference(s, self.rg, "")) for s in STEPS if s.tool == "search_text"],
                reference=self._ref,
                warm_calls=WARM_CALLS,
            )
            await anyio.sleep(self.idle_s)
            first, *rest = AFTER_IDLE
            took, checking = await checked_ms(lambda: call(first.tool, first.arguments), clock)
            await anyio.sleep(self.idle_s)  # the machine idles again: its wake-up falls on the reference too
            out.pairs[(first.kind, "idle")] = (took, await self._ref(reference(first, self.rg, "")))
            out.checking["idle"] = checking
            for step in rest:
                *pair, checking = await self._paired(
                    lambda s=step: call(s.tool, s.arguments), reference(step, self.rg, ""), clock
                )
                out.pairs[(step.kind, "idle")] = (pair[0], pair[1])
                out.checking["idle"] += checking
            status = await client.read_resource("repo-sandbox://status")
            search = json.loads(getattr(status.contents[0], "text", "{}")).get("search", {})
            out.index = {key: search.get(key) for key in ("census", "rg_output")}
            out.rg = search.get("ripgrep") or {}
        return out
