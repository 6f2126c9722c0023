"""The call pipeline: validate -> policy (in the tool body, via the jail) -> tool -> graded result.

This is the one place where exceptions become results:
- `SandboxError` (expected) -> its payload, `isError: true`, logged at INFO;
- pydantic `ValidationError` -> `invalid_arguments` naming the field(s) (values are never echoed);
- anything else (a crash) -> `internal_error` with an incident id; the traceback stays in the server log.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import ValidationError

from repo_sandbox.errors import InternalError, InvalidArgumentsError, SandboxError
from repo_sandbox.tools.registry import TOOLS_BY_NAME, ToolSpec
from repo_sandbox.workspace import Workspace

logger = logging.getLogger("repo_sandbox")


ProgressReporter = Callable[[float, float | None, str | None], Awaitable[None]]
"""`await report(progress, total, message)`: a progress notification to the caller (no-op if not asked)."""


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling: what the transport knows about the caller of one tool call."""

    session_id: str = "local"
    """Stable id of the client session (one per connection); state such as budgets is kept per session."""
    request_id: str | None = None
    """The JSON-RPC request id, when there is one."""
    report_progress: ProgressReporter | None = None
    """Sends progress notifications for this call, when the transport can."""


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """A finished call: the structured payload and whether it is an error."""

    tool: str
    payload: dict[str, Any]
    is_error: bool
    duration_ms: float

    @property
    def error_code(self) -> str | None:
        return self.payload["error"]["code"] if self.is_error else None

    def to_json(self) -> str:
        return json.dumps(self.payload, ensure_ascii=False)


def invalid_arguments_from(exc: ValidationError, tool: str) -> InvalidArgumentsError:
    fields: list[str] = []
    problems: list[str] = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "extra_forbidden":
            message = "unknown argument"
        elif error["type"] == "missing":
            message = "required"
        else:
            message = error["msg"]
        fields.append(field)
        problems.append(f"'{field}': {message}")
    return InvalidArgumentsError(
        f"Invalid arguments for {tool}: " + "; ".join(problems) + ".",
        hint=f"Fix {', '.join(repr(f) for f in fields)} to match the input schema of {tool}.",
        fields=fields,
        field=fields[0] if fields else None,
    )


def run_tool_sync(spec: ToolSpec, workspace: Workspace, arguments: dict[str, Any]) -> dict[str, Any]:
    """Validate and run one tool body; returns the success payload or raises SandboxError."""
    try:
        args = spec.args_model.model_validate(arguments)
    except ValidationError as exc:
        raise invalid_arguments_from(exc, spec.name) from None
    result = spec.body(workspace, args)
    return result.model_dump(mode="json")


class CallPipeline:
    """Runs tool calls for one workspace and grades every failure."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def call(
        self, tool: str, arguments: dict[str, Any] | None, context: CallContext | None = None
    ) -> CallOutcome:
        """Run one call to completion; never raises for a tool failure (it becomes the outcome's payload)."""
        del context  # consumed by the guard, budget and audit stages as they are added
        started = time.perf_counter()
        try:
            spec = TOOLS_BY_NAME.get(tool)
            if spec is None:
                raise InvalidArgumentsError(
                    f"Unknown tool '{tool}'.",
                    hint=f"Use one of: {', '.join(sorted(TOOLS_BY_NAME))}.",
                    tool=tool,
                )
            if arguments is not None and not isinstance(arguments, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise InvalidArgumentsError("Arguments must be a JSON object.", field="(arguments)")
            payload = await anyio.to_thread.run_sync(run_tool_sync, spec, self.workspace, arguments or {})
            is_error = False
        except SandboxError as exc:
            logger.info("tool %s failed: %s", tool, exc.code)
            payload, is_error = exc.to_payload(), True
        except Exception:
            incident = InternalError.new_incident()
            logger.exception("tool %s crashed (incident %s)", tool, incident.details["incident_id"])
            payload, is_error = incident.to_payload(), True
        return CallOutcome(tool, payload, is_error, (time.perf_counter() - started) * 1000)
