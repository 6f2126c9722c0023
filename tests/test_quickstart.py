"""README's quick start: `scripts/serve --root /path/to/repo` serves that repository over stdio to a real MCP
client, and like `repo-sandbox` itself it leaves the root to `--config` and the environment when not given."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SERVE = Path(__file__).resolve().parents[1] / "scripts" / "serve"


@pytest.fixture
def two_repos(tmp_path: Path) -> tuple[Path, Path]:
    here, there = tmp_path / "here", tmp_path / "conf" / "there"
    for root, name in ((here, "here.py"), (there, "there.py")):
        root.mkdir(parents=True)
        (root / name).write_text("print('hi')\n")
    (here / ".git").mkdir()  # the current directory is served without --root only when it is a repository
    (tmp_path / "conf" / "policy.toml").write_text('[workspace]\nroot = "there"\n')
    return here, there


@pytest.mark.parametrize(
    ("args", "env", "served"),
    [
        pytest.param(["--root", "{there}"], {}, "there.py", id="root-flag"),
        pytest.param([], {}, "here.py", id="current-directory"),
        pytest.param(["--config", "{conf}/policy.toml"], {}, "there.py", id="root-from-config"),
        pytest.param([], {"REPO_SANDBOX_WORKSPACE_ROOT": "{there}"}, "there.py", id="root-from-environment"),
    ],
)
async def test_scripts_serve_serves_the_repository_it_is_given_over_stdio(
    two_repos: tuple[Path, Path], args: list[str], env: dict[str, str], served: str
) -> None:
    here, there = two_repos

    def fill(text: str) -> str:
        return text.format(there=there, conf=there.parent)

    params = StdioServerParameters(
        command=str(SERVE),
        args=[fill(arg) for arg in args],
        env={**{key: fill(value) for key, value in env.items()}, "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]},
        cwd=here,
    )
    with anyio.fail_after(60):
        async with Client(params, mode="auto") as client:
            result = await client.call_tool("search_files", {"pattern": "*.py"})
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["files"] == [served]


STUB_PYTHON = """#!/bin/sh
# `python -m venv DIR` makes DIR/bin/python (this stub) and DIR/bin/repo-sandbox; `python -m pip ...` succeeds.
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
  printf '#!/bin/sh\\necho "repo-sandbox $*" >&2\\n' > "$3/bin/repo-sandbox" && chmod +x "$3/bin/repo-sandbox"
fi
exit 0
"""


def test_scripts_serve_prints_one_line_per_set_up_step_on_first_run(tmp_path: Path) -> None:
    """A first run installs for about a minute: each step says what it does; a later run says nothing."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    for name in ("scripts/serve", "scripts/bootstrap", "pyproject.toml"):
        shutil.copy2(SERVE.parents[1] / name, project / name)
    stub = tmp_path / "python3"
    stub.write_text(STUB_PYTHON)
    stub.chmod(0o755)
    env = {**os.environ, "PYTHON": str(stub)}
    serve = [str(project / "scripts" / "serve"), "--root", "."]
    first = subprocess.run(serve, check=False, env=env, capture_output=True, text=True, timeout=60)
    second = subprocess.run(serve, check=False, env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    steps = [line for line in first.stderr.splitlines() if line.startswith("bootstrap: ")]
    assert [line.split(" ")[1] for line in steps] == ["creating", "upgrading", "installing", "ready"]
    assert first.stderr.splitlines()[-1] == "repo-sandbox serve --root ."
    assert second.stderr.splitlines() == ["repo-sandbox serve --root ."]
