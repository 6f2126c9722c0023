"""The bridge's commands: `repo-sandbox openai-tools` and `repo-sandbox ask QUESTION`.

Only argparse is imported at module level: building the CLI parser must stay cheap for `serve`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from repo_sandbox.bridge.loop import ToolCallRecord

BRIDGE_COMMANDS: Final = ("openai-tools", "ask")

_SHORT_ARGS: Final = 120


def add_bridge_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],  # pyright: ignore[reportPrivateUsage]
    add_policy_flags: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `openai-tools` and `ask` to the CLI's sub-commands."""
    tools_help = "print the tools as OpenAI function-calling `tools` definitions (JSON)"
    tools = sub.add_parser(
        "openai-tools",
        help=tools_help,
        description="Print the tools as OpenAI function-calling `tools` definitions (JSON), under the policy of "
        "--config and the REPO_SANDBOX_<SECTION>_<KEY> variables: exactly what `ask` sends the model.",
    )
    add_policy_flags(tools)
    _add_description_flag(tools)

    ask = sub.add_parser(
        "ask",
        help="ask an OpenAI-compatible model about the repository; it uses the tools (printed to stderr)",
        description="Run the tool loop: the model calls the tools (through the same policy as the MCP server) "
        "until it answers. The answer goes to stdout, each tool call to stderr. The API key comes from "
        "REPO_SANDBOX_BRIDGE_API_KEY or OPENAI_API_KEY (see [bridge] in config.example.toml).",
    )
    ask.add_argument("question", help="what to ask about the repository")
    add_policy_flags(ask)
    ask.add_argument("--base-url", help="OpenAI-compatible API base, e.g. http://127.0.0.1:8000/v1 ([bridge] base_url)")
    ask.add_argument("--model", help="model name ([bridge] model)")
    ask.add_argument("--max-rounds", type=int, help="most chat requests before giving up ([bridge] max_rounds)")
    ask.add_argument("--system", help="system prompt (default: the server's instructions to MCP clients)")
    ask.add_argument("--json", action="store_true", help="print the whole transcript as JSON instead of the answer")
    _add_description_flag(ask)


def _add_description_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-description-chars",
        type=int,
        default=1024,
        metavar="N",
        help="cut longer tool descriptions at a sentence end (OpenAI's limit is 1024; 0: no limit)",
    )


def run_bridge_command(args: argparse.Namespace) -> int:
    if args.command == "openai-tools":
        from repo_sandbox.bridge.openai import openai_tools
        from repo_sandbox.config.loader import load_settings
        from repo_sandbox.stdout import emit

        overrides = {("workspace", "root"): args.root} if args.root else {}
        settings = load_settings(args.config, overrides=overrides)
        tools = openai_tools(settings=settings, max_description_chars=args.max_description_chars)
        emit(json.dumps(tools, indent=2, ensure_ascii=False))
        return 0
    return _ask(args)


def _short(text: str) -> str:
    with contextlib.suppress(ValueError):
        text = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text if len(text) <= _SHORT_ARGS else text[: _SHORT_ARGS - 1] + "…"


def print_tool_call(record: ToolCallRecord) -> None:
    outcome = record.error_code if record.is_error else "ok"
    print(
        f"[{record.round}] {record.name or '(no name)'} {_short(record.arguments)} -> {outcome} "
        f"({record.duration_ms:.0f} ms)",
        file=sys.stderr,
        flush=True,
    )


def _ask(args: argparse.Namespace) -> int:
    import anyio

    from repo_sandbox.bridge.client import ChatClient, ChatSettings
    from repo_sandbox.bridge.errors import MaxRoundsExceededError
    from repo_sandbox.bridge.loop import ToolLoop
    from repo_sandbox.bridge.openai import openai_tools
    from repo_sandbox.config.loader import load_settings
    from repo_sandbox.errors import SandboxError
    from repo_sandbox.stdout import emit
    from repo_sandbox.wiring.identity import INSTRUCTIONS
    from repo_sandbox.workspace import Workspace

    overrides: dict[tuple[str, str], Any] = {}
    for key in ("root",):
        if getattr(args, key):
            overrides[("workspace", key)] = getattr(args, key)
    for key in ("base_url", "model", "max_rounds"):
        if getattr(args, key) is not None:
            overrides[("bridge", key)] = getattr(args, key)
    settings = load_settings(args.config, overrides=overrides)
    if not settings.bridge.model:
        print("repo-sandbox ask: no model: pass --model or set REPO_SANDBOX_BRIDGE_MODEL", file=sys.stderr)
        return 2
    try:
        chat_settings = ChatSettings.from_config(settings.bridge)
    except ValueError as exc:
        print(f"repo-sandbox ask: {exc}", file=sys.stderr)
        return 2
    messages = [{"role": "system", "content": args.system or INSTRUCTIONS}, {"role": "user", "content": args.question}]
    tools = openai_tools(settings=settings, max_description_chars=args.max_description_chars)

    async def run() -> dict[str, Any] | str:
        async with ChatClient(chat_settings) as client:
            loop = ToolLoop(client, workspace, tools=tools, on_tool_call=print_tool_call)
            transcript = await loop.run_tool_loop(messages, settings.bridge.max_rounds)
        return transcript.to_json() if args.json else transcript.answer or ""

    workspace = Workspace(settings)
    try:
        result = anyio.run(run)
    except SandboxError as exc:
        print(f"repo-sandbox ask: {exc.code}: {exc.message}\n  hint: {exc.hint}", file=sys.stderr)
        if args.json and isinstance(exc, MaxRoundsExceededError):
            emit(json.dumps(exc.transcript.to_json(), indent=2, ensure_ascii=False))
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        workspace.close()
    emit(json.dumps(result, indent=2, ensure_ascii=False) if isinstance(result, dict) else result)
    return 0
