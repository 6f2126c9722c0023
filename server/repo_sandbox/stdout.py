"""What the commands print on stdout, quietly cut short when the reader goes away (`repo-sandbox call … | head`)."""

from __future__ import annotations

import os
import sys


def emit(text: str) -> None:
    """Print `text` and a newline; a closed pipe ends the output without a traceback.

    The rest of the output is sent to the null device, so that the interpreter's flush at exit does not
    raise again (the recipe of Python's `signal` documentation).
    """
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
