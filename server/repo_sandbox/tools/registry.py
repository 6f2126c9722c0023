"""The tool table: every tool the server publishes, as a `ToolSpec`. The wiring and the bridge hand it to the
call pipeline (`runtime.assembly.build_pipeline`); the pipeline itself knows no tool by name."""

from __future__ import annotations

from typing import Final

from repo_sandbox.tools import ask_user, count_lines, execute_bash, read_file, search_files, search_text
from repo_sandbox.tools.spec import ToolSpec

TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name="search_files",
        title="Find files by glob",
        description=search_files.DESCRIPTION,
        args_model=search_files.SearchFilesArgs,
        result_models=(search_files.SearchFilesResult,),
        body=search_files.search_files,
    ),
    ToolSpec(
        name="read_file",
        title="Read a text file",
        description=read_file.DESCRIPTION,
        args_model=read_file.ReadFileArgs,
        result_models=(read_file.ReadFileResult,),
        body=read_file.read_file_tool,
    ),
    ToolSpec(
        name="search_text",
        title="Search file contents",
        description=search_text.DESCRIPTION,
        args_model=search_text.SearchTextArgs,
        result_models=(
            search_text.SearchTextContentResult,
            search_text.SearchTextFilesResult,
            search_text.SearchTextCountResult,
        ),
        body=search_text.search_text_body,
    ),
    ToolSpec(
        name="count_lines",
        title="Count lines of code",
        description=count_lines.DESCRIPTION,
        args_model=count_lines.CountLinesArgs,
        result_models=(count_lines.CountLinesResult,),
        body=count_lines.count_lines,
    ),
    ToolSpec(
        name="ask_user",
        title="Ask the user",
        description=ask_user.DESCRIPTION,
        args_model=ask_user.AskUserArgs,
        result_models=(ask_user.AskUserResult,),
        body=ask_user.ask_user,
        idempotent=False,
        needs_elicitation=True,
    ),
    ToolSpec(
        name="execute_bash",
        title="Run a read-only command",
        description=execute_bash.DESCRIPTION,
        describe=execute_bash.description,
        args_model=execute_bash.ExecuteBashArgs,
        result_models=(execute_bash.ExecuteBashResult,),
        body=execute_bash.execute_bash,
        read_only=False,
        destructive=False,
        idempotent=False,
        open_world=False,
    ),
)

TOOLS_BY_NAME: Final[dict[str, ToolSpec]] = {spec.name: spec for spec in TOOLS}
