"""Bridge fixtures: the scripted chat server, a Go repository like the seed document's, chat clients on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_openai import ScriptedChatServer

from repo_sandbox.bridge.client import ChatClient, ChatSettings
from repo_sandbox.workspace import Workspace

API_KEY = "sk-test-bridge-0123456789abcdef"

GO_FILES = {
    "go.mod": "module example.com/demo\n\ngo 1.22\n",
    "main.go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello")\n}\n',
    "cmd/tool/main.go": "package main\n\nfunc main() {\n\trun()\n}\n\nfunc run() {}\n",
    "internal/repo/repo.go": "package repo\n\ntype UserRepository interface {\n\tFind(id int) error\n}\n",
    "README.md": "# Demo\n\nA small Go service.\n",
    "web/app.ts": "export const x = 1;\n",
}
"""main.go 7 lines, cmd/tool/main.go 7, internal/repo/repo.go 5: 19 Go lines in 3 files, 2 with `func main`."""


@pytest.fixture
def go_repo(tmp_path: Path) -> Path:
    root = tmp_path / "gorepo"
    for name, text in GO_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".env").write_text("OPENAI_API_KEY=sk-should-never-leak\n", encoding="utf-8")
    return root


@pytest.fixture
def go_workspace(go_repo: Path, make_workspace: Callable[..., Workspace]) -> Workspace:
    return make_workspace(go_repo)


@pytest.fixture
def chat_server() -> Iterator[ScriptedChatServer]:
    server = ScriptedChatServer()
    server.start()
    yield server
    server.stop()


class SleepRecorder:
    """An injected `sleep`: records the backoff waits instead of spending them."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await anyio.lowlevel.checkpoint()


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


ClientFactory = Callable[..., ChatClient]


@pytest.fixture
def make_client(chat_server: ScriptedChatServer, sleeps: SleepRecorder) -> ClientFactory:
    """`make_client(**settings)`: a client of the scripted server; no jitter, recorded (not spent) backoff."""

    def factory(**overrides: Any) -> ChatClient:
        values: dict[str, Any] = {"base_url": chat_server.base_url, "model": "scripted-model", "api_key": API_KEY}
        values.update(overrides)
        return ChatClient(ChatSettings(**values), sleep=sleeps, jitter=lambda: 0.0)

    return factory
