"""Command line: serve (default), tools, call, check-config. Logs go to stderr; stdout is the protocol's."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from repo_sandbox import __version__, heap
from repo_sandbox.bridge.commands import BRIDGE_COMMANDS, add_bridge_commands, run_bridge_command
from repo_sandbox.config.loader import ConfigError, load_settings
from repo_sandbox.config.model import Settings
from repo_sandbox.stdout import emit

COMMANDS = ("serve", "tools", "call", "check-config", "audit", *BRIDGE_COMMANDS)

EPILOG = """examples:
  repo-sandbox --root /path/to/repo                 serve the repository over stdio (for MCP clients)
  REPO_SANDBOX_TOKEN=... repo-sandbox serve --transport http --host 0.0.0.0 --root /repo
                                                    Streamable HTTP at /mcp, WebSocket at /ws, /healthz
  repo-sandbox call search_text '{"pattern": "TODO"}' --root .
  repo-sandbox tools                                list the tools with their schemas
  repo-sandbox check-config config.toml             validate a config file and print the effective policy
  repo-sandbox audit tail audit.jsonl -n 50         the last audit events, one line each
  repo-sandbox audit stats audit.jsonl.1 audit.jsonl  calls per tool, errors by code, slowest calls

  repo-sandbox openai-tools                         print the tools as OpenAI function-calling definitions
  repo-sandbox ask "Where is main?" --root . --base-url http://127.0.0.1:8000/v1 --model M
                                                    let an OpenAI-compatible model answer, using the tools

Claude Desktop / any MCP client:
  {"command": "repo-sandbox", "args": ["--root", "/path/to/repo"]}

Every config key can also be set as REPO_SANDBOX_<SECTION>_<KEY> (e.g. REPO_SANDBOX_LIMITS_MAX_OUTPUT_BYTES).
Precedence: command-line flags > environment > --config file > defaults."""


SERVE_DESCRIPTION = """Serve the repository over MCP: stdio (the default), or with --transport http Streamable
HTTP at /mcp, WebSocket at /ws (subprotocol "mcp") and an unauthenticated /healthz.
HTTP clients send "Authorization: Bearer <token>" (WebSocket clients may use /ws?token=<token>); the token is
read from $REPO_SANDBOX_TOKEN ([server] token_env); without a token only a loopback address is served.
`repo-sandbox --root DIR` is the same as `repo-sandbox serve --root DIR`."""


def _add_policy_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        help="repository to expose (default: [workspace] root; else the client's MCP root; else the current "
        "directory if it is a repository other than / or the home directory)",
    )
    parser.add_argument("--config", metavar="FILE", help="TOML policy file (see config.example.toml)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="repo-sandbox",
        description="An MCP server giving AI agents safe, fast, read-only access to one code repository.\n"
        "Without a COMMAND it serves (`repo-sandbox serve --help` lists the flags: --root, --config, --transport, ...).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"repo-sandbox {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="serve the repository over MCP (the default command)",
        description=SERVE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_policy_flags(serve)
    serve.add_argument("--transport", choices=["stdio", "http"], help="stdio (default), or http: /mcp, /ws, /healthz")
    serve.add_argument("--host", help="http: address to listen on (default 127.0.0.1; others need a token)")
    serve.add_argument("--port", type=int, help="http: port to listen on (default 8765; 0 picks a free one)")
    serve.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level on stderr")

    tools_help = "print the tools with their input/output schemas and annotations (JSON)"
    tools = sub.add_parser(
        "tools",
        help=tools_help,
        description=tools_help[0].upper() + tools_help[1:] + ", as the server publishes them under the policy of "
        "--config and the REPO_SANDBOX_<SECTION>_<KEY> variables.",
    )
    _add_policy_flags(tools)

    call = sub.add_parser(
        "call",
        help="run one tool in-process and print its result or graded error (JSON)",
        description="Run one tool in-process, under the same policy as the server, and print its result (exit 0) "
        "or its graded error (exit 1) as JSON on stdout. Exit 2: bad arguments or configuration.",
    )
    call.add_argument("tool", help="tool name, e.g. search_text")
    call.add_argument("arguments", nargs="?", default="{}", help="tool arguments as a JSON object")
    _add_policy_flags(call)

    check = sub.add_parser(
        "check-config",
        help="validate a TOML config and print the effective policy",
        description="Validate a TOML config file as the server would at start-up (environment overrides "
        "REPO_SANDBOX_<SECTION>_<KEY> applied) and print the effective policy as JSON, secrets masked: exit 0. "
        "A bad file: every error, naming the file (or variable) and the key, on stderr: exit 2.",
    )
    check.add_argument("file", nargs="?", help="the TOML file to check (or --config FILE)")
    _add_policy_flags(check)

    audit = sub.add_parser(
        "audit", help="read an audit log (JSONL): tail or stats", description="Read an audit log ([audit] path, JSONL)."
    )
    audit_sub = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    tail = audit_sub.add_parser("tail", help="the last events, one line each")
    tail.add_argument("files", nargs="+", metavar="FILE", help="audit files, oldest first (e.g. x.jsonl.1 x.jsonl)")
    tail.add_argument("-n", "--lines", type=int, default=20, help="how many events (default 20)")
    stats = audit_sub.add_parser("stats", help="calls per tool, errors by code, slowest calls, decisions")
    stats.add_argument("files", nargs="+", metavar="FILE", help="audit files, oldest first")
    stats.add_argument("--slowest", type=int, default=10, help="how many of the slowest calls to list (default 10)")
    stats.add_argument("--json", action="store_true", help="print the numbers as JSON")
    add_bridge_commands(sub, _add_policy_flags)
    return parser


def root_override(args: argparse.Namespace) -> dict[tuple[str, str], Any]:
    """--root as a settings override (every command that loads the policy accepts it)."""
    return {("workspace", "root"): args.root} if getattr(args, "root", None) else {}


def _settings(args: argparse.Namespace, config: str | None) -> Settings:
    overrides = root_override(args)
    if getattr(args, "transport", None):
        overrides[("server", "transport")] = args.transport
    for key in ("host", "port"):
        if getattr(args, key, None) is not None:
            overrides[("server", key)] = getattr(args, key)
    if getattr(args, "log_level", None):
        overrides[("server", "log_level")] = args.log_level
    # `_serve` checks the command policy itself: over stdio right after the handshake, which it would delay.
    return load_settings(config, overrides=overrides, exec_check_later=args.command == "serve")


def _call(settings: Settings, tool: str, raw_arguments: str) -> int:
    from repo_sandbox.runtime.assembly import build_pipeline
    from repo_sandbox.serving import configure_logging
    from repo_sandbox.tools.registry import TOOLS
    from repo_sandbox.workspace import Workspace

    configure_logging("WARNING")
    try:
        arguments = json.loads(raw_arguments)
    except json.JSONDecodeError as exc:
        print(f"repo-sandbox call: ARGUMENTS is not valid JSON: {exc.msg}", file=sys.stderr)
        return 2
    workspace = Workspace(settings)
    try:
        outcome = anyio.run(build_pipeline(workspace, TOOLS).call, tool, arguments)
    finally:
        workspace.close()
    emit(json.dumps(outcome.payload, indent=2, ensure_ascii=False))
    return 1 if outcome.is_error else 0


def _audit(args: argparse.Namespace) -> int:
    from repo_sandbox.audit.view import compute_stats, format_stats, format_tail, read_events

    try:
        events, unreadable = read_events(args.files)
    except OSError as exc:
        print(f"repo-sandbox audit: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    if args.audit_command == "tail":
        if output := format_tail(events, args.lines):
            emit(output)
        return 0
    stats = compute_stats(events, unreadable, slowest=args.slowest)
    emit(json.dumps(stats, indent=2, ensure_ascii=False) if args.json else format_stats(stats))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        parser.error(f"unknown command {argv[0]!r} (choose from {', '.join(COMMANDS)}; without one: serve)")
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "serve")
    args = parser.parse_args(argv)
    if args.command != "serve":
        heap.settle()  # only a server lives long enough to gain from holding the collector
    try:
        if args.command == "tools":
            from repo_sandbox.wiring.convert import tools_listing

            emit(tools_listing(load_settings(args.config, overrides=root_override(args))))
            return 0
        if args.command == "audit":
            return _audit(args)
        if args.command == "check-config":
            if args.file and args.config and args.file != args.config:
                parser.error("check-config: give the file once (FILE or --config FILE)")
            if not (args.file or args.config):
                parser.error("check-config: which file? (FILE or --config FILE)")
            settings = load_settings(args.file or args.config, overrides=root_override(args))
            emit(json.dumps(settings.model_dump(mode="json"), indent=2))
            return 0
        if args.command in BRIDGE_COMMANDS:
            return run_bridge_command(args)
        settings = _settings(args, args.config)
        if args.command == "call":
            return _call(settings, args.tool, args.arguments)
        from repo_sandbox.serving import serve

        return serve(settings)
    except ConfigError as exc:
        print(f"repo-sandbox: configuration error:\n{exc}", file=sys.stderr)
        return 2
