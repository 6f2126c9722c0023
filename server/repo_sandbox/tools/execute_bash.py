"""execute_bash: run an allowlisted command line, shell-free, inside the OS sandbox (see `exec.service`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from repo_sandbox.config.model import Settings
from repo_sandbox.exec.installed import programs
from repo_sandbox.exec.service import exec_service
from repo_sandbox.tools._args import ToolArgs
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Run a read-only command line in the repository, inside a sandbox, and get its output.

Use it for what the other tools cannot do: git history and diffs (`git log`, `git diff`, `git show`,
`git blame`, `git status`), quick pipelines over text (`sort | uniq -c`, `awk`, `jq`), or file metadata.
It accepts ONE command or a `|` pipeline of commands, never a shell script: `;`, `&&`, `||`, `&`,
redirections (`>`, `2>&1`), `$VAR`, `$(...)`, backticks, `~` and `{a,b}` are refused, so run separate calls
instead. Quotes and escapes work as in bash, and globs (`*.py`, `src/*/x.ts`) are expanded for you. Only
allowlisted programs with allowlisted options run (read repo-sandbox://policy): {programs}. Long options must be spelled out in full. The repository is read-only;
only /tmp is writable and it is discarded. A non-zero exit_code is a normal result, not an error. Output
is capped (head and tail kept, marked where cut); `sandbox` names the isolation that was used.

Example: {"command": "git log --oneline -10 -- src/server.py"}
Example: {"command": "awk '{print $1}' access.log | sort | uniq -c | sort -rn | head -5", "cwd": "logs"}
Common mistake: using grep or find here to search code; use search_text and search_files, which are
faster, paged and respect .gitignore. Another: `cd dir && cmd`; pass "cwd": "dir" instead.
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
            description="One command or a '|' pipeline of allowlisted programs, quoted like bash.",
            examples=["git diff HEAD~1 --stat", "grep -rn TODO src | head -20"],
        ),
    ]
    timeout: Annotated[
        float | None,
        Field(
            gt=0,
            description="Seconds before the command is killed (default 30; the server caps it, e.g. 120).",
            examples=[60],
        ),
    ] = None
    cwd: Annotated[
        str, Field(description="Directory to run in, relative to the repository root.", examples=[".", "src"])
    ] = "."


class ExecuteBashResult(ResultModel):
    exit_code: int = Field(description="Exit status of the last command of the pipeline (128+N: killed by signal N).")
    stdout: str = Field(description="Standard output of the last command (head and tail kept when cut).")
    stderr: str = Field(description="Standard error of all commands.")
    stdout_truncated: bool = Field(description="True when stdout was cut (a marker shows where).")
    stderr_truncated: bool = Field(description="True when stderr was cut.")
    duration_ms: float = Field(description="Wall time of the run, in milliseconds.")
    sandbox: str = Field(description="The OS isolation used: bwrap, landlock or none (unsandboxed).")
    redactions: int | None = Field(
        default=None, description="Secrets masked in this result (null when output masking is off)."
    )


async def execute_bash(ws: Workspace, args: ExecuteBashArgs, context: Any) -> ExecuteBashResult:
    """Raises: SandboxError for refusals (parse, policy, jail, approval, sandbox) and timeouts."""
    outcome = await exec_service(ws).execute(
        args.command,
        cwd=args.cwd,
        timeout_s=args.timeout,
        session_id=getattr(context, "session_id", "local"),
        extras=getattr(context, "extras", {}),
    )
    return ExecuteBashResult(
        exit_code=outcome.exit_code,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        stdout_truncated=outcome.stdout_truncated,
        stderr_truncated=outcome.stderr_truncated,
        duration_ms=outcome.duration_ms,
        sandbox=outcome.sandbox,
    )
