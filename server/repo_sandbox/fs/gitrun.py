"""Running a read-only git command on the host and streaming its output, killed after `GIT_TIMEOUT_S`.

The environment comes from the caller (`fs.gitenv.GitHardening.host_env`); the walker lists the index with it
(`fs.gitrepo`), and `exec.git.scan` reads a repository's records with it.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from typing import IO, Final

GIT_TIMEOUT_S: Final = 30.0
"""A git run taking longer than this is killed (the caller fails closed)."""
CHUNK: Final = 1 << 20


class ScanError(Exception):
    """The repository cannot be read soundly (git failed, something is not a plain file): fail closed."""


class GitRun:
    """Runs read-only git commands for one repository and streams their output."""

    def __init__(self, binary: str, env: Callable[[], dict[str, str]], cwd: str) -> None:
        self.binary = binary
        self.env = env
        self.cwd = cwd

    def run(self, args: list[str], consume: Callable[[bytes], bool], stdin: IO[bytes] | None = None) -> None:
        """Stream stdout into `consume` (returning False stops git early).

        Raises: ScanError when git cannot start, fails or runs out of time.
        """
        try:
            process = subprocess.Popen(
                [self.binary, *args], env=self.env(), cwd=self.cwd, stdin=stdin or subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        except OSError as exc:
            raise ScanError(f"git {args[0]}: {exc}") from None
        timer = threading.Timer(GIT_TIMEOUT_S, process.kill)
        timer.start()
        stopped = False
        try:
            assert process.stdout is not None
            while chunk := process.stdout.read(CHUNK):
                if not consume(chunk):
                    stopped = True
                    break
        except BaseException:
            stopped = True
            raise
        finally:
            if stopped:
                process.kill()
            if process.stdout is not None:
                process.stdout.close()
            code = process.wait()  # still bounded by the timer
            timer.cancel()
        if not stopped and code != 0:
            raise ScanError(f"git {args[0]} exited with {code}")
