"""The call pipeline: stages (budget -> guard -> ... ) -> validate -> tool body -> graded outcome.

This is the one place where exceptions become results:
- `SandboxError` (expected) -> its payload, `isError: true`, logged at INFO;
- pydantic `ValidationError` -> `invalid_arguments` naming the field(s) (values are never echoed);
- anything else (a crash) -> `internal_error` with an incident id; the traceback stays in the server log.

Stages are middleware: `await stage(call, call_next)` may refuse a call by raising `SandboxError`, change
or observe the outcome of `call_next(call)`, or do both. A stage's own refusal is graded right where it is
raised, so the stages outside it (audit, budgets) still see an outcome. The order is fixed by whoever builds
the pipeline (`runtime.assembly.build_stages`), outermost first.

The pipeline knows the tools it is given (`ToolSpec`s, from the wiring or the bridge, normally the whole
`tools.registry.TOOLS`); each call carries its tool's spec (`ToolCall.spec`, None for an unknown name) to the
stages and the body.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from repo_sandbox.calls import CallContext
from repo_sandbox.errors import InternalError, InvalidArgumentsError, SandboxError
from repo_sandbox.tools.spec import ToolSpec
from repo_sandbox.workspace import Workspace

logger = logging.getLogger("repo_sandbox")


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """A finished call: the structured payload and whether it is an error.

    The payload is not changed once the outcome exists (a stage that changes a result builds a new outcome),
    so its JSON text is serialised once, by whichever of the budget, the audit and the transport asks first.
    """

    tool: str
    payload: dict[str, Any]
    is_error: bool
    duration_ms: float
    _json: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def error_code(self) -> str | None:
        return self.payload["error"]["code"] if self.is_error else None

    def to_json(self) -> str:
        if self._json is None:
            object.__setattr__(self, "_json", compact_json(self.payload))
        return self._json  # pyright: ignore[reportReturnType]  # set just above

    def json_bytes(self) -> int:
        """Size of the JSON text in UTF-8 (lone surrogates counted as written by `surrogatepass`)."""
        text = self.to_json()
        return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass(slots=True)
class ToolCall:
    """One call travelling through the stages."""

    tool: str
    arguments: Any
    """As the client sent them: normally a JSON object; anything else is refused by validation."""
    context: CallContext
    spec: ToolSpec | None = None
    """The tool's spec, when the pipeline knows a tool of that name."""
    started: float = field(default_factory=time.perf_counter)

    def outcome(self, payload: dict[str, Any], *, is_error: bool) -> CallOutcome:
        return CallOutcome(self.tool, payload, is_error, (time.perf_counter() - self.started) * 1000)

    def failed(self, error: Exception) -> CallOutcome:
        """Grade an exception: a SandboxError as itself, anything else as an internal error with an incident id."""
        if isinstance(error, SandboxError):
            logger.info("tool %s failed: %s", self.tool, error.code)
            return self.outcome(error.to_payload(), is_error=True)
        incident = InternalError.new_incident()
        logger.error("tool %s crashed (incident %s)", self.tool, incident.details["incident_id"], exc_info=error)
        return self.outcome(incident.to_payload(), is_error=True)


def compact_json(value: Any) -> str:
    """JSON text without spaces or ASCII escapes, by pydantic-core's encoder (a few times faster than
    `json.dumps`, same text); lone surrogates, which it cannot encode, go through `json.dumps`."""
    try:
        return to_json(value).decode()
    except PydanticSerializationError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


Handler = Callable[[ToolCall], Awaitable[CallOutcome]]
"""The rest of the pipeline, as seen from one stage."""


class Stage(Protocol):
    """A middleware step around the tool body."""

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome: ...


def invalid_arguments_from(exc: ValidationError, tool: str) -> InvalidArgumentsError:
    fields: list[str] = []
    problems: list[str] = []
    for error in exc.errors():
        field_name = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "extra_forbidden":
            message = "unknown argument"
        elif error["type"] == "missing":
            message = "required"
        else:
            message = error["msg"]
        fields.append(field_name)
        problems.append(f"'{field_name}': {message}")
    return InvalidArgumentsError(
        f"Invalid arguments for {tool}: " + "; ".join(problems) + ".",
        hint=f"Fix {', '.join(repr(f) for f in fields)} to match the input schema of {tool}.",
        fields=fields,
        field=fields[0] if fields else None,
    )


def unknown_tool(
    tool: str, context: CallContext, workspace: Workspace, tools: Iterable[ToolSpec]
) -> InvalidArgumentsError:
    """The refusal of a call to a name that is not one of `tools`, naming the tools this caller is offered."""
    can_elicit = context.elicit is not None
    offered = sorted(spec.name for spec in tools if spec.offered(workspace.settings, can_elicit=can_elicit))
    return InvalidArgumentsError(f"Unknown tool '{tool}'.", hint=f"Use one of: {', '.join(offered)}.", tool=tool)


def validate_arguments(spec: ToolSpec, arguments: Any) -> Any:
    """Raises: InvalidArgumentsError naming the fields that fail the tool's input model."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidArgumentsError("Arguments must be a JSON object.", field="(arguments)")
    try:
        args = spec.args_model.model_validate(arguments)
    except ValidationError as exc:
        raise invalid_arguments_from(exc, spec.name) from None
    for name, value in args:
        if isinstance(value, str) and "\x00" in value:  # no path, pattern or command can carry one to the OS
            raise InvalidArgumentsError(
                f"'{name}' contains a NUL byte.", hint=f"Remove the NUL byte from '{name}'.", field=name
            )
    return args


async def run_tool(workspace: Workspace, spec: ToolSpec, call: ToolCall) -> dict[str, Any]:
    """Validate and run one tool body; returns the success payload or raises SandboxError.

    Synchronous bodies run in a worker thread; `async def` bodies also receive the call context.
    """
    args = validate_arguments(spec, call.arguments)
    if inspect.iscoroutinefunction(spec.body):
        result = await spec.body(workspace, args, call.context)
    else:
        result = await anyio.to_thread.run_sync(spec.body, workspace, args)
    return result.model_dump(mode="json")


def _graded(stage: Stage, call_next: Handler) -> Handler:
    async def handler(call: ToolCall) -> CallOutcome:
        try:
            return await stage(call, call_next)
        except Exception as exc:  # noqa: BLE001  # graded here so that outer stages still see an outcome
            return call.failed(exc)

    return handler


class CallPipeline:
    """Runs calls to `tools` for one workspace through the stages and grades every failure."""

    def __init__(self, workspace: Workspace, tools: Iterable[ToolSpec], stages: Sequence[Stage] = ()) -> None:
        self.workspace = workspace
        self.tools: Mapping[str, ToolSpec] = {spec.name: spec for spec in tools}
        self.stages = tuple(stages)
        handler: Handler = self._run_body
        for stage in reversed(self.stages):
            handler = _graded(stage, handler)
        self._handler = handler

    async def _run_body(self, call: ToolCall) -> CallOutcome:
        try:
            if call.spec is None:
                raise unknown_tool(call.tool, call.context, self.workspace, self.tools.values())
            return call.outcome(await run_tool(self.workspace, call.spec, call), is_error=False)
        except Exception as exc:  # noqa: BLE001  # every crash becomes an internal_error outcome
            return call.failed(exc)

    async def call(self, tool: str, arguments: Any, context: CallContext | None = None) -> CallOutcome:
        """Run one call to completion; never raises for a tool failure (it becomes the outcome's payload)."""
        return await self._handler(ToolCall(tool, arguments, context or CallContext(), self.tools.get(tool)))
