"""Helpers for the execute_bash tests: the sandbox backends of this machine, a hostile repository, probes."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from repo_sandbox.exec.sandbox import Backend, _probe_one  # pyright: ignore[reportPrivateUsage]
from tree_files import write

SECRETS = ("OUTSIDE-SECRET-7f3a", "ENV-SECRET-91c2", "SIBLING-SECRET-5d0e", "HARDLINK-SECRET-22b8", "YAML-SECRET-c4e1")
"""Text that must never appear in any execute_bash output: outside files, denied files, hard-linked data."""
HOST_ENV_SECRET = "HOST-ENV-SECRET-0b7d"
"""Put in the server's environment by tests; a sandboxed program must never see it."""
PWNED = "PWNED-by-repo-config"
"""Printed by the commands a malicious .git/config tries to run."""
DENIED_NAMES = frozenset({".env", ".env.prod", "secrets.yaml", ".git", "server.pem.", ".git.", "creds.pem"})
"""The deny-listed entries of `build_repo` (`env_link` is a link to `.env`): none may show, not even as a name."""
_NAME_SEPARATORS = re.compile(r"[\s/'\"`:=,;()\[\]{}<>|*]+")


def leaked_names(text: str) -> set[str]:
    """The denied names that appear as a path component anywhere in `text` (`./.env`, `.env -> x`, ...)."""
    return set(DENIED_NAMES.intersection(_NAME_SEPARATORS.split(text)))


@functools.cache
def os_backends() -> tuple[str, ...]:
    """The OS sandbox backends that work on this machine (CI installs bubblewrap)."""
    return tuple(
        str(b) for b in (Backend.BWRAP, Backend.BWRAP_NOPROC, Backend.LANDLOCK) if _probe_one(b, False) == "ok"
    )


def auto_os_layer() -> str:
    """The `sandbox` an execute_bash result reports under `sandbox = "auto"` on this machine."""
    return Backend(os_backends()[0]).os_layer


def git(root: Path, *args: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def build_repo(base: Path) -> Path:
    """A git repository with ordinary files, denied files (one committed), escapes and special files."""
    root = base / "repo"
    outside = base / "outside"
    write(outside / "secret.txt", f"{SECRETS[0]}\n")
    write(outside / "hard-secret.txt", f"{SECRETS[3]}\n")
    write(base / "repo-evil" / "secret.txt", f"{SECRETS[2]}\n")
    write(root / "README.md", "# Demo\n\nTODO: write docs\nsecond line\n")
    write(root / "src" / "main.py", "import os\n\n\ndef main():\n    print('hello')  # TODO\n")
    write(root / "src" / "util.py", "def helper(x):\n    return x * 2  # TODO later\n")
    write(root / "data.json", '{"name": "demo", "items": [{"id": 1}, {"id": 2}]}\n')
    write(root / "access.log", "10.0.0.1 GET /\n10.0.0.2 GET /a\n10.0.0.1 GET /b\n")
    write(root / "notes.md", "alpha\nbeta\n")
    write(root / "aaa.txt", "a\n")
    write(root / ".env", f"API_KEY={SECRETS[1]}\n")
    write(root / "config" / "secrets.yaml", f"token: {SECRETS[4]}\n")
    write(root / "cmp" / "x" / "same.txt", "same\n")
    write(root / "cmp" / "y" / "same.txt", "same\n")
    write(root / ".gitignore", "*.log\n")
    write(root / "server.pem.", f"KEY={SECRETS[1]}\n")  # committed: a denied name, as Windows spells it
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "-A", "-f")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "first")
    write(root / "README.md", "# Demo\n\nTODO: write docs\nsecond line\nthird line\n")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-am", "second")
    write(root / "src" / "main.py", "import os\n\n\ndef main():\n    print('hello, world')  # TODO\n")
    os.symlink(str(outside), root / "link_out")
    os.symlink(str(outside / "secret.txt"), root / "link_secret")
    os.symlink(str(outside), root / "cmp" / "x" / "escape")
    write(root / "cmp" / "y" / "escape" / "secret.txt", "decoy\n")
    os.link(outside / "hard-secret.txt", root / "hard.txt")
    os.symlink(".env", root / "env_link")
    os.symlink("config", root / "cfg")
    write(root / ".env.prod", f"PROD_KEY={SECRETS[1]}\n")
    os.link(root / ".env.prod", root / "env_hardlink")
    os.mkfifo(root / "pipe.fifo")
    write(root / "--output=injected.txt", "glob injection bait\n")
    write(root / "list.txt", "README.md\n")
    for variant in (".git./config", "sub/.docker/config.json", "creds.pem "):
        write(root / variant, f"KEY={SECRETS[1]}\n")  # denied names spelt as Windows takes them
    return root


def poison_git_config(root: Path, marker: Path) -> None:
    """Make .git/config run a marker-writing command from every hook a read-only command could reach."""
    evil = f"sh -c 'echo {PWNED} >&2; echo {PWNED}; touch {marker}'"
    config = root / ".git" / "config"
    config.write_text(
        config.read_text()
        + f'[core]\n\tfsmonitor = "{evil}"\n\tpager = "{evil}"\n\tsshCommand = "{evil}"\n'
        + f'[diff]\n\texternal = "{evil}"\n'
        + f'[diff "evil"]\n\ttextconv = "{evil}"\n\tcommand = "{evil}"\n'
        + f'[filter "evil"]\n\tclean = "{evil}"\n\tsmudge = "{evil}"\n\tprocess = "{evil}"\n'
        + f'[alias]\n\tst = "!{evil}"\n\tlog = "!{evil}"\n'
        + f'[log]\n\tshowSignature = true\n[gpg]\n\tprogram = "{evil}"\n'
        + f'[pager]\n\tlog = "{evil}"\n\tdiff = "{evil}"\n'
    )
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("* diff=evil filter=evil\n")


def tagged_processes(session_id: str) -> list[int]:
    """PIDs of live processes started by execute_bash calls of `session_id` (found by their env tag)."""
    needle = f"REPO_SANDBOX_CALL={session_id}-".encode()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if needle in handle.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def tree_snapshot(base: Path) -> dict[str, Any]:
    """Every entry under `base` with its type, size and mtime (to prove nothing was written)."""
    snapshot: dict[str, Any] = {}
    for directory, dirs, files in os.walk(base):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            snapshot[path] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return snapshot
