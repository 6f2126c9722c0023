"""A `.git/config` that includes a file the sandbox cannot read: a graded error or a working git, never a host path.

Under Landlock git met 'Permission denied' on such an include and failed every command with the included
file's host path (and the repository's) in stderr. Through the real MCP SDK client under every sandbox backend
here and `none`: each repository below either runs git (bwrap does not mount the file, so git skips it; `none`
reads it) or answers a graded `sandbox_failed` that names no path. Nothing ever shows the outside directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import git, os_backends, write
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from security.test_git_deny_history import COMMIT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OUTSIDE = "outside-dir-7c2e"
"""The name of the directory beside the repository that the includes point into."""

INCLUDES: dict[str, str] = {
    "absolute": "[include]\n\tpath = {outside}/inc.conf\n",
    "relative": "[include]\n\tpath = ../../{name}/inc.conf\n",
    "nested": "[include]\n\tpath = ../cfg/extra.conf\n",  # a readable file of the repository includes the outside
    "includeif": '[includeIf "gitdir:{root}/"]\n\tpath = {outside}/inc.conf\n',
    "protected": "[include]\n\tpath = ../.env\n",
    "directory": "[include]\n\tpath = {outside}\n",
}
HARMLESS: dict[str, str] = {
    "missing": "[include]\n\tpath = {outside}/missing.conf\n",
    "home": "[include]\n\tpath = ~/.gitconfig-work\n",
    "inside": "[include]\n\tpath = ../cfg/plain.conf\n",
}


def make_repo(base: Path, kind: str, template: str) -> Path:
    root = base / kind / "repo"
    outside = base / kind / OUTSIDE
    write(outside / "inc.conf", "[user]\n\tname = Included\n")
    write(root / "README.md", "# Demo\n")
    write(root / ".env", "[user]\n\tname = Env\n")
    write(root / "cfg" / "extra.conf", f"[include]\n\tpath = {outside}/inc.conf\n")
    write(root / "cfg" / "plain.conf", "[user]\n\tname = Plain\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "README.md")
    git(root, *COMMIT, "-m", "start")
    config = root / ".git" / "config"
    config.write_text(config.read_text() + template.format(outside=outside, name=OUTSIDE, root=root))
    return root


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("includes")
    return {kind: make_repo(base, kind, template) for kind, template in {**INCLUDES, **HARMLESS}.items()}


async def git_log(root: Path, backend: str, make_settings: Any) -> tuple[bool, dict[str, Any]]:
    workspace = Workspace(make_settings(root, exec={"sandbox": backend}))
    try:
        async with Client(build_server(workspace), mode="legacy") as client:
            with anyio.fail_after(30):
                result = await client.call_tool("execute_bash", {"command": "git log --oneline"})
    finally:
        workspace.close()
    assert result.structured_content is not None
    return result.is_error, result.structured_content


@pytest.mark.parametrize("backend", [*os_backends(), "none"])
async def test_an_unreadable_include_never_shows_a_host_path(
    repos: dict[str, Path], backend: str, make_settings: Any
) -> None:
    problems: list[tuple[str, dict[str, Any]]] = []
    for kind, root in repos.items():
        is_error, content = await git_log(root, backend, make_settings)
        text = str(content)
        if OUTSIDE in text or str(root.parent) in text:
            problems.append((kind, content))
        elif is_error:
            graded = content["error"]["code"] == "sandbox_failed" and "configuration" in content["error"]["message"]
            if not graded or kind in HARMLESS:
                problems.append((kind, content))
        elif content["exit_code"] != 0 or "start" not in content["stdout"] or content["stderr"]:
            problems.append((kind, content))  # git ran: it must have worked, quietly
    assert problems == [], "\n".join(f"{kind}: {str(content)[:300]}" for kind, content in problems)
