"""execute_bash overhead: round trip of `wc -l FILE` and `git status` against the bare commands, and the
OS sandbox's own cost (`bwrap <our jail> true` against `true`). Prints medians and ratios.

Target (DESIGN.md §8): execute_bash overhead <= the sandbox's own measured cost + 3 ms.
Each command is also run unsandboxed exactly as the policy rewrites it ("policy argv": forced flags, git's
hardening environment and the deny-list exclude pathspecs that can match something, `exec.git.excludes`),
so that the work the policy adds inside the program (git matching paths against the pathspecs) is told
apart from the server's own overhead; for git also with the whole deny-list as before that pruning.

    .venv/bin/python bench/exec_overhead.py [--root REPO] [--file FILE] [--runs N] [--sandbox BACKEND] [--stat p25|min]

Without --root it measures a fresh git repository holding a copy of this project's sources (a worktree's
.git lives outside its root, where the sandbox cannot see it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import anyio

from repo_sandbox.config.loader import load_settings
from repo_sandbox.exec.sandbox import Limits, StageCommand, stage_command
from repo_sandbox.exec.service import exec_service
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent"}


def run_once(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return time.perf_counter() - start


async def main(args: argparse.Namespace, root: str) -> None:
    settings = load_settings(None, env={}, overrides={("workspace", "root"): root, ("exec", "sandbox"): args.sandbox})
    workspace = Workspace(settings)
    service = exec_service(workspace)
    backend = service.backend()
    pipeline = build_pipeline(workspace, TOOLS)
    view = service.views.current()
    limits = Limits(31, 1 << 30, 64 << 20, 1024, 256)
    rows = [("wc -l", ["wc", "-l", args.file], f"wc -l {args.file}"), ("git status", ["git", "status"], "git status")]
    samples: dict[str, list[float]] = {}

    def add(key: str, seconds: float) -> None:
        samples.setdefault(key, []).append(seconds)

    policy_argv: dict[str, tuple[list[str], dict[str, str]]] = {}
    sandboxed: dict[str, StageCommand] = {}
    service.git.excludes.names.found()  # the first scan of git's records done: measure the steady state
    for label, _, command in rows:
        evaluation, cwd = service.prepare(command, ".")
        [plan] = evaluation.plans
        env = {**ENV, **plan.env, **(service.git.hardening.env() if plan.needs_git_dir else {})}
        runs = service.git.excludes.prune(plan.args, view)[0] if plan.needs_git_dir else plan.args
        policy_argv[label] = ([plan.binary, *runs], env)
        if runs != plan.args:
            policy_argv[f"{label} whole deny-list"] = ([plan.binary, *plan.args], env)
        [sandboxed[label]] = service.build(
            evaluation, cwd, backend, service.scratch_dir(backend)[0], "bench", 30
        ).stages
    with tempfile.TemporaryDirectory() as tmp:
        jail = stage_command(backend, "true", [], view=view, cwd=root, env=ENV, tmp=tmp, limits=limits, network=False)
        assert jail is not None
        for _ in range(args.runs):  # interleaved, so that load on a shared machine hits every series alike
            add("true", run_once(["true"], root, ENV))
            add("jail true", run_once(jail.argv, root, jail.env))
            for label, bare_argv, command in rows:
                add(f"{label} bare", run_once(bare_argv, root, ENV))
                add(f"{label} policy", run_once(policy_argv[label][0], root, policy_argv[label][1]))
                if (whole := policy_argv.get(f"{label} whole deny-list")) is not None:
                    add(f"{label} policy whole", run_once(whole[0], root, whole[1]))
                add(f"{label} sandboxed", run_once(sandboxed[label].argv, root, sandboxed[label].env))
                start = time.perf_counter()
                outcome = await pipeline.call("execute_bash", {"command": command})
                add(f"{label} tool", time.perf_counter() - start)
                assert not outcome.is_error and outcome.payload["exit_code"] == 0, outcome.payload
    picks = {"median": statistics.median, "p25": lambda values: sorted(values)[len(values) // 4], "min": min}
    pick = picks[args.stat]
    ms = {key: pick(values) * 1000 for key, values in samples.items()}
    revalidate = time.perf_counter()
    service.views.current()
    print(f"backend: {backend}   runs: {args.runs}   statistic: {args.stat}   root: {root}")
    print(f"repository view check per call: {(time.perf_counter() - revalidate) * 1000:.3f} ms")
    report(ms, [label for label, _, _ in rows], policy_argv)
    workspace.close()


def report(ms: dict[str, float], labels: list[str], policy_argv: dict[str, tuple[list[str], dict[str, str]]]) -> None:
    sandbox_cost = ms["jail true"] - ms["true"]
    print(f"`true`: bare {ms['true']:.2f} ms | in our jail {ms['jail true']:.2f} ms")
    print(f"sandbox's own cost (jail true - true): {sandbox_cost:.2f} ms")
    for label in labels:
        bare, policy, tool = ms[f"{label} bare"], ms[f"{label} policy"], ms[f"{label} tool"]
        overhead = tool - bare
        verdict = "meets" if overhead <= sandbox_cost + 3 else "MISSES"
        print(
            f"{label:<11} bare {bare:7.2f} ms | execute_bash {tool:7.2f} ms | ratio {tool / bare:5.2f}x | "
            f"overhead {overhead:6.2f} ms, target <= {sandbox_cost + 3:.2f} ms: {verdict} "
            f"(beyond the sandbox: {overhead - sandbox_cost:+.2f} ms)"
        )
        jailed = ms[f"{label} sandboxed"]
        print(
            f"{'':<11} policy argv: unsandboxed {policy:7.2f} ms (the policy's work inside the program "
            f"{policy - bare:+.2f} ms), in the sandbox {jailed:7.2f} ms (this program's sandbox cost "
            f"{jailed - policy:+.2f} ms) | the server's own overhead: {tool - jailed:+.2f} ms"
        )
        if f"{label} policy whole" in ms:
            kept = sum(arg.startswith(":(exclude") for arg in policy_argv[label][0])
            whole = policy_argv[f"{label} whole deny-list"][0]
            print(
                f"{'':<11} exclusions passed: {kept} of {sum(a.startswith(':(exclude') for a in whole)}; with all "
                f"of them unsandboxed {ms[f'{label} policy whole']:7.2f} ms "
                f"({ms[f'{label} policy whole'] - bare:+.2f} ms over bare)"
            )


def make_corpus(target: str, root_entries: int = 0) -> str:
    """A git repository with a copy of this project's sources and README, committed; `root_entries` more
    entries at its root (half files, half directories holding a file), and a denied `.env` beside them."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.join(target, "corpus")
    shutil.copytree(os.path.join(here, "server"), os.path.join(root, "server"))
    shutil.copy(os.path.join(here, "README.md"), root)
    for n in range(root_entries):
        path = os.path.join(root, f"dir{n}", "file.txt") if n % 2 else os.path.join(root, f"file{n}.txt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(f"entry {n}\n")
    if root_entries:
        with open(os.path.join(root, ".env"), "w") as handle:
            handle.write("TOKEN=bench\n")
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run([*git, *command], cwd=root, env=ENV, check=True, capture_output=True)
    return root


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--root", help="repository to run in (default: a fresh copy of this project's sources)")
    parser.add_argument("--file", default="README.md", help="file for `wc -l` (relative to the root)")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument(
        "--stat",
        choices=["median", "p25", "min"],
        default="median",
        help="p25 is steadier on a loaded machine; min estimates each series without interference",
    )
    parser.add_argument(
        "--root-entries", type=int, default=0, help="add this many entries (and a denied .env) to the corpus root"
    )
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = arguments.root or make_corpus(scratch, arguments.root_entries)
        anyio.run(main, arguments, os.path.realpath(root))
