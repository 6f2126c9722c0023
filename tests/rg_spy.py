"""Every rg process the searches of a test start (`started_rg`): to see that a search ran rg, how, or not."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from repo_sandbox.engine import rgprocess


class StartedRg:
    """Every rg process the searches started, and its argv, in order (`started_rg`)."""

    def __init__(self) -> None:
        self.processes: list[rgprocess.RgProcess] = []
        self.argvs: list[list[str]] = []
        self.any = threading.Event()

    def clear(self) -> None:
        self.processes.clear()
        self.argvs.clear()


@pytest.fixture
def started_rg(monkeypatch: pytest.MonkeyPatch) -> StartedRg:
    started = StartedRg()
    real_init = rgprocess.RgProcess.__init__

    def remember(self: rgprocess.RgProcess, argv: list[str], *args: Any, **kwargs: Any) -> None:
        real_init(self, argv, *args, **kwargs)
        started.processes.append(self)
        started.argvs.append(argv)
        started.any.set()

    monkeypatch.setattr(rgprocess.RgProcess, "__init__", remember)
    return started
