"""execute_bash: run an allowlisted command line, shell-free, inside the OS sandbox (see `exec.service`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from repo_sandbox.calls import CallContext
from repo_sandbox.config.model import Settings
from repo_sandbox.exec.installed import programs
from repo_sandbox.exec.service import exec_service
from repo_sandbox.tools._args import ToolArgs
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Run read-only commands in the repository, in a sandbox; prints stdout, then `[stderr]` and
stderr if any, then `[exit code N]`.

Use it for what the other tools cannot do: git history and diffs (`git log`, `git diff`, `git show`,
`git blame`), pipelines over text (`sort | uniq -c`, `awk`, `jq`), file metadata. Commands, `|` pipelines
and lists joined by `&&`, `||`, `;` (`cd DIR` in a list moves the rest), no shell script: `&`, `( )`,
`$VAR`, `$(...)`, backticks, `~`, `{a,b}` and redirections other than to /dev/null or `2>&1` are refused.
Quotes work as in bash; globs are expanded for you.
Only allowlisted programs and options run (repo-sandbox://policy): {programs}.
Spell long options in full.
Only a throwaway /tmp is writable; a non-zero exit code is a normal result; output is capped (head and tail).

Example: {"command": "git log --oneline -10 -- src/server.py"}
Common mistake: using grep or find here to search code; use search_text and search_files (faster, paged,
respect .gitignore).
"""


def description(settings: Settings | None) -> str:
    """DESCRIPTION naming the allowed programs that are installed on this server (`exec.installed`)."""
    found = programs(None if settings is None else settings.exec)
    names = [name for name in found.allow if name != "git"]
    line = " ".join(names) + (" and the read-only git sub-commands" if "git" in found.allow else "")
    if found.ask:
        line += f"; with the user's approval: {' '.join(found.ask)}"
    return DESCRIPTION.replace("{programs}", line)


class ExecuteBashArgs(ToolArgs):
    command: Annotated[
        str,
        Field(
            min_length=1,
            max_length=65536,
            description="Allowlisted commands quoted like bash: a '|' pipeline or a '&&' / '||' / ';' list.",
            examples=["git diff HEAD~1 --stat", "cd src && ls"],
        ),
    ]
    timeout: Annotated[
        float | None,
        Field(
            gt=0,
            description="Seconds before the command is killed (default 30; capped by the server).",
            examples=[60],
        ),
    ] = None
    cwd: Annotated[
        str, Field(description="Directory to run in, relative to the repository root.", examples=["src"])
    ] = "."


class StepResult(ResultModel):
    command: str = Field(description="The element of the list, as written.")
    exit_code: int | None = Field(description="Its exit status; null when `&&` / `||` skipped it.")


class ExecuteBashResult(ResultModel):
    exit_code: int = Field(
        description="Exit status of the command line, as bash's: the last pipeline that ran, of its last command "
        "(128+N: killed by signal N)."
    )
    stdout: str = Field(description="Standard output of the last command (head and tail kept when cut).")
    stderr: str = Field(description="Standard error of all commands.")
    stdout_truncated: bool = Field(description="True when stdout was cut (a marker shows where).")
    stderr_truncated: bool = Field(description="True when stderr was cut.")
    duration_ms: float = Field(description="Wall time of the run, in milliseconds.")
    sandbox: str = Field(description="The OS isolation used: bwrap, landlock or none (unsandboxed).")
    steps: list[StepResult] | None = Field(
        default=None,
        description="For a list (`a && b`, `a || b`, `a; b`): each element's exit status in order; null otherwise.",
    )
    redactions: int | None = Field(
        default=None, description="Secrets masked in this result (null when output masking is off)."
    )


async def execute_bash(ws: Workspace, args: ExecuteBashArgs, context: CallContext) -> ExecuteBashResult:
    """Raises: SandboxError for refusals (parse, policy, jail, approval, sandbox) and timeouts."""
    outcome = await exec_service(ws).execute(
        args.command,
        cwd=args.cwd,
        timeout_s=args.timeout,
        session_id=context.session_id,
        approve=context.approve,
    )
    return ExecuteBashResult(
        exit_code=outcome.exit_code,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        stdout_truncated=outcome.stdout_truncated,
        stderr_truncated=outcome.stderr_truncated,
        duration_ms=outcome.duration_ms,
        sandbox=outcome.sandbox,
        steps=None
        if outcome.steps is None
        else [StepResult(command=s.command, exit_code=s.exit_code) for s in outcome.steps],
    )
