"""execute_bash end to end for one workspace: parse, expand, judge, approve, sandbox, run, shape the result.

Approvals (`exec.approval`): a command whose programs include one from `exec.ask` runs only after the
user's yes through the call's `CallContext.approve`; without that provider it is refused with
`approval_required` (fail closed). Nothing is remembered between calls.

Every error raised once the command has started (`timeout`, `killed`, `sandbox_failed`) carries
`duration_ms` in its details, so the exec-seconds budget counts the time it took.

Audit (`workspace.audit.decision`): every refusal by the command policy (`command_denied`), every approval
step (`exec.approval`), and, once per service, a sandbox that is not the one asked for or none at all
(`sandbox_fallback`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import anyio

from repo_sandbox.calls import Approve
from repo_sandbox.errors import (
    ApprovalRequiredError,
    CommandNotAllowedError,
    InvalidArgumentsError,
    SandboxError,
    SandboxFailedError,
)
from repo_sandbox.exec.approval import obtain_approval
from repo_sandbox.exec.binds import SANDBOX_ROOT
from repo_sandbox.exec.chain import Judged, Judgement, Place, judge_all, judge_one, merged, name_element, run_list
from repo_sandbox.exec.git.excludes import PruneCheck
from repo_sandbox.exec.git.stage import GitStage
from repo_sandbox.exec.globbing import GlobExpander, check_argv_size
from repo_sandbox.exec.installed import programs as installed_programs
from repo_sandbox.exec.operands import JailPaths
from repo_sandbox.exec.outcome import DRAIN_LIMIT, ExecOutcome, shape_outcome, stderr_cap, stdout_cap
from repo_sandbox.exec.runner import TAG_VARIABLE, RunResult, run_pipeline
from repo_sandbox.exec.sandbox import Backend, Limits, SandboxInfo, StageCommand, stage_command
from repo_sandbox.exec.selection import audit_fallback, sandbox_info, sandbox_report
from repo_sandbox.exec.view import ViewCache
from repo_sandbox.policy.commands import CommandPolicy, Evaluation
from repo_sandbox.policy.decision import Decision
from repo_sandbox.policy.programs import SYSTEM_PATH
from repo_sandbox.shell.parse import CommandList, Pipeline, parse_command
from repo_sandbox.shell.redirects import Stream
from repo_sandbox.workspace import Workspace

REPORTED_LIMITS: Final = frozenset(
    {"max_memory_mb", "max_processes", "max_open_files", "max_file_size_mb", "max_stages", "max_command_chars"}
)
"""The `[exec]` limits shown in status and policy."""


@dataclass(frozen=True, slots=True)
class Built:
    """The sandboxed stages; `check` when a git stage got fewer exclusions (see `exec.git.stage`)."""

    stages: list[StageCommand]
    check: PruneCheck | None = None


@dataclass(frozen=True, slots=True)
class Planned:
    """A judged command line: its elements' judgements, the merged evaluation (for approval) and the
    sandboxed stages of each judged pipeline (None while a human must approve first)."""

    commands: CommandList
    start: Place
    judged: Judged
    evaluation: Evaluation
    built: dict[tuple[int, Place], Built] | None
    tmp: str
    per_call: bool


class ExecService:
    """Holds what execute_bash reuses between calls: the policy, the repository view and git's part."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.config = workspace.settings.exec
        self.policy = CommandPolicy.from_config(self.config, workspace.settings.workspace.effective_deny)
        self.views = ViewCache(workspace.jail)
        self.git = GitStage(workspace.root, workspace.jail.deny, self.policy.rules.get("git"))
        self._state_dir: str | None = None
        self._sandbox_audited = False
        workspace.on_close.append(self.close)

    def close(self) -> None:
        self.views.close()
        self.git.close()
        if self._state_dir is not None:
            shutil.rmtree(self._state_dir, ignore_errors=True)
            self._state_dir = None
        with _services_lock:
            _services.pop(self.workspace, None)

    @property
    def sandbox(self) -> SandboxInfo:
        info = sandbox_info(self.config.sandbox, self.config.network)
        if not self._sandbox_audited:
            self._sandbox_audited = True
            audit_fallback(self.workspace.audit, info)
        return info

    def report(self, *, programs: bool = False) -> dict[str, Any]:
        """The "exec" entry of status (and, with `programs`, of policy): is execute_bash on, which OS sandbox
        runs it and why, and (policy) what each program may do. Blocking the first time (the probe)."""
        config = self.config
        if not config.enabled:
            return {"enabled": False, "sandbox": None, "note": "execute_bash is disabled (exec.enabled = false)."}
        report: dict[str, Any] = {
            "enabled": True,
            **sandbox_report(self.sandbox),
            "network": config.network,
            "limits": config.model_dump(include=set(REPORTED_LIMITS)),
        }
        found = installed_programs(config)
        if programs:
            report["ask"] = list(found.ask)
            report["programs"] = {
                name: entry for name, entry in self.policy.describe().items() if name not in found.missing
            }
        else:
            report["missing_programs"] = list(found.missing)
        return report

    def judge(self, command: str, cwd: str) -> tuple[CommandList, Place, Judged]:
        """Parse, expand globs and judge every element of the command line (`exec.chain`). Blocking.

        Raises: SandboxError for every refusal, each recorded in the audit trail (`command_denied`).
        """
        try:
            if not self.config.enabled:
                raise CommandNotAllowedError("execute_bash is disabled by the server policy.", rule="exec.enabled")
            config = self.config
            commands = parse_command(command, max_stages=config.max_stages, max_chars=config.max_command_chars)
            start = self._start(cwd)
            return commands, start, judge_all(commands, start, self.workspace.jail, self._evaluate)
        except SandboxError as refusal:
            self._audit_refusal(refusal)
            raise

    def rejudge(self, commands: CommandList, index: int, place: Place) -> Judgement:
        """Judge one element in a directory it was not judged for (a `cd` before it was skipped). Blocking."""
        try:
            return judge_one(commands.elements[index], place, self.workspace.jail, self._evaluate)
        except SandboxError as refusal:
            self._audit_refusal(refusal)
            raise name_element(refusal, commands, index) from None

    def prepare(self, command: str, cwd: str) -> tuple[Evaluation, str]:
        """`judge` for a command line that is one pipeline: its evaluation and the root-relative cwd."""
        _, start, judged = self.judge(command, cwd)
        (evaluation,) = judged.values()
        assert isinstance(evaluation, Evaluation)
        return evaluation, start.real

    def _name_allowed(self, refusal: SandboxError) -> SandboxError:
        """Put the programs that run here in a refusal's details (many clients cannot read the policy resource)."""
        refusal.details["allowed_programs"] = installed_programs(self.config).short()
        refusal.hint = (
            "Use one of details.allowed_programs (each with its allowed options: repo-sandbox://policy), or a "
            "dedicated tool: search_text, search_files, read_file, count_lines."
        )
        return refusal

    def _audit_refusal(self, refusal: SandboxError) -> None:
        details = refusal.details
        if refusal.code == "command_not_allowed" and details.get("rule") == "exec.allow":
            self._name_allowed(refusal)
        self.workspace.audit.decision(
            "command_denied",
            rule=str(details.get("rule") or refusal.code),
            code=refusal.code,
            **{key: details[key] for key in ("program", "option", "construct", "field") if key in details},
        )

    def _start(self, cwd: str) -> Place:
        jail = self.workspace.jail
        logical = jail.normalize(cwd, field="cwd")
        fd, real = jail.open_dir(cwd, field="cwd")
        os.close(fd)
        return Place(logical, real)

    def _evaluate(self, pipeline: Pipeline, place: Place) -> Evaluation:
        jail = self.workspace.jail
        shown_root = SANDBOX_ROOT if self.sandbox.backend in (Backend.BWRAP, Backend.BWRAP_NOPROC) else None
        expander = GlobExpander(jail, place.real, shown_root)
        stages: list[tuple[str, list[str]]] = []
        for stage in pipeline.stages:
            args = [text for word in stage.args for text in expander.expand(word)]
            check_argv_size(args)
            stages.append((stage.program, args))
        return self.policy.evaluate(stages, JailPaths(jail, place.real, shown_root))

    def _limits(self, timeout_s: float) -> Limits:
        mib = 1024 * 1024
        return Limits(
            cpu_s=int(timeout_s) + 1,
            memory_bytes=self.config.max_memory_mb * mib,
            file_size_bytes=self.config.max_file_size_mb * mib,
            open_files=self.config.max_open_files,
            processes=self.config.max_processes,
        )

    def build(
        self, evaluation: Evaluation, cwd_rel: str, backend: Backend, tmp: str, tag: str, timeout_s: float,
        *, prune: bool = True,
    ) -> Built:  # fmt: skip
        """The sandboxed command of every stage. Blocking (scans the repository view, reads git config).

        `prune`: give git stages only the deny-list exclusions that can match something (`exec.git.stage`).
        """
        view = self.views.current()
        if not view.complete:
            raise SandboxFailedError(
                "The repository is too large for execute_bash to hide its protected files; use the other tools."
            )
        root = self.workspace.root
        host_cwd = root if cwd_rel == "." else os.path.join(root, cwd_rel)
        base_env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", TAG_VARIABLE: tag}
        commands: list[StageCommand] = []
        check: PruneCheck | None = None
        for plan in evaluation.plans:
            env = {**base_env, **plan.env, **self.git.env(plan)}
            args, check = self.git.prepare(plan, env, view, host_cwd, backend, prune=prune, check=check)
            command = stage_command(
                backend, plan.binary, args, view=view, cwd=host_cwd, env=env, tmp=tmp,
                limits=self._limits(timeout_s), network=self.config.network, git=plan.needs_git_dir,
            )  # fmt: skip
            if command is None:
                self.workspace.audit.decision(
                    "command_denied", rule="installed programs", code="command_not_allowed", program=plan.program
                )
                raise self._name_allowed(
                    CommandNotAllowedError(
                        f"'{plan.program}' is allowed but not installed on this server.",
                        program=plan.program,
                        rule="installed programs",
                    )
                )
            commands.append(command)
        return Built(commands, check)

    def timeout_for(self, requested: float | None) -> float:
        limits = self.workspace.limits
        if requested is None:
            return limits.default_timeout_s
        if requested > limits.max_timeout_s:
            raise InvalidArgumentsError(
                f"timeout {requested} s is above the server's limit of {limits.max_timeout_s} s.",
                hint=f"Use a timeout of at most {limits.max_timeout_s} seconds.",
                field="timeout",
                max_timeout_s=limits.max_timeout_s,
            )
        return requested

    def backend(self) -> Backend:
        """Raises: SandboxFailedError when the configured sandbox does not work here."""
        info = self.sandbox
        if info.backend is None:
            raise SandboxFailedError(
                f"The configured sandbox '{info.requested}' does not work on this server.",
                hint='Ask the operator to install bubblewrap or choose exec.sandbox = "auto".',
                tried=info.tried,
            )
        return info.backend

    def scratch_dir(self, backend: Backend) -> tuple[str, bool]:
        """(directory, is_per_call). The launcher backends get a fresh private temp dir per call (their
        $HOME/$TMPDIR); bwrap has its own tmpfs and only needs the mask sources, kept for the service's life."""
        if backend in (Backend.LANDLOCK, Backend.NONE):
            return tempfile.mkdtemp(prefix="repo-sandbox-exec-"), True
        with _services_lock:
            if self._state_dir is None:
                self._state_dir = tempfile.mkdtemp(prefix="repo-sandbox-masks-")
                weakref.finalize(self, shutil.rmtree, self._state_dir, ignore_errors=True)  # also at exit
            return self._state_dir, False

    def plan(self, command: str, cwd: str, tag: str, timeout_s: float) -> Planned:
        """judge + build in one worker-thread hop; no stages yet when a human must approve first."""
        commands, start, judged = self.judge(command, cwd)
        evaluation = merged([j for j in judged.values() if isinstance(j, Evaluation)])
        backend = self.backend()
        tmp, per_call = self.scratch_dir(backend)
        planned = Planned(commands, start, judged, evaluation, None, tmp, per_call)
        if evaluation.decision is Decision.ASK:
            return planned
        try:
            return replace(planned, built=self.build_all(planned, backend, tag, timeout_s))
        except BaseException:
            if per_call:
                shutil.rmtree(tmp, ignore_errors=True)
            raise

    def build_all(
        self, planned: Planned, backend: Backend, tag: str, timeout_s: float
    ) -> dict[tuple[int, Place], Built]:
        built: dict[tuple[int, Place], Built] = {}
        for (index, place), judgement in planned.judged.items():
            if isinstance(judgement, Evaluation):
                try:
                    built[index, place] = self.build(judgement, place.real, backend, planned.tmp, tag, timeout_s)
                except SandboxError as refusal:
                    raise name_element(refusal, planned.commands, index) from None
        return built

    async def execute(
        self, command: str, *, cwd: str, timeout_s: float | None, session_id: str, approve: Approve | None
    ) -> ExecOutcome:
        """Raises: SandboxError for every refusal; TimeoutExceededError carries the partial output."""
        timeout_s = self.timeout_for(timeout_s)
        tag = f"{session_id}-{uuid.uuid4().hex[:12]}"
        planned = await anyio.to_thread.run_sync(self.plan, command, cwd, tag, timeout_s)
        commands = planned.commands
        started = time.perf_counter()
        deadline = started + timeout_s

        async def rejudge(index: int, place: Place) -> Judgement:
            judgement = await anyio.to_thread.run_sync(self.rejudge, commands, index, place)
            if isinstance(judgement, Evaluation) and judgement.decision is Decision.ASK and not approved:
                raise name_element(ApprovalRequiredError("This element needs approval."), commands, index)
            return judgement

        async def run(index: int, evaluation: Evaluation, place: Place) -> RunResult:
            def rebuild(prune: bool) -> Built:
                return self.build(evaluation, place.real, self.backend(), planned.tmp, tag, timeout_s, prune=prune)

            built = (planned.built or {}).get((index, place)) or await anyio.to_thread.run_sync(rebuild, True)
            element = commands.elements[index]
            assert isinstance(element, Pipeline)
            streams: list[tuple[Stream, Stream]] = [(stage.stdout, stage.stderr) for stage in element.stages]
            remaining = max(deadline - time.perf_counter(), 0.001)
            result = await self._run(built.stages, remaining, tag, streams)
            if built.check is not None and not await anyio.to_thread.run_sync(
                self.git.unchanged, built.check, self.views
            ):  # the repository moved while git ran: run it again with every exclusion
                remaining = max(deadline - time.perf_counter(), 0.001)
                result = await self._run(
                    (await anyio.to_thread.run_sync(rebuild, False)).stages, remaining, tag, streams
                )
            return result

        approved = False
        try:
            if planned.built is None:
                await obtain_approval(
                    self.workspace.audit, self.policy.ask, command, planned.evaluation, planned.start.real, approve
                )
                approved = True
                started = time.perf_counter()
                deadline = started + timeout_s
            try:
                max_output = self.workspace.limits.max_output_bytes
                result, steps = await run_list(
                    commands, planned.start, planned.judged, rejudge=rejudge, run=run,
                    stdout_cap=stdout_cap(max_output), stderr_cap=stderr_cap(max_output),
                )  # fmt: skip
                listed = steps if len(commands.elements) > 1 else None
                return shape_outcome(result, self.backend(), timeout_s, max_output, listed)
            except SandboxError as exc:
                exc.details.setdefault("duration_ms", round((time.perf_counter() - started) * 1000, 1))
                raise
        finally:
            if planned.per_call and not _removed_if_empty(planned.tmp):
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(lambda: shutil.rmtree(planned.tmp, ignore_errors=True))

    async def _run(
        self, stages: list[StageCommand], timeout_s: float, tag: str, streams: Sequence[tuple[Stream, Stream]]
    ) -> RunResult:
        max_output = self.workspace.limits.max_output_bytes
        try:
            return await run_pipeline(
                stages, timeout_s=timeout_s, stdout_cap=stdout_cap(max_output),
                stderr_cap=stderr_cap(max_output), drain_limit=DRAIN_LIMIT, tag=tag, streams=streams,
            )  # fmt: skip
        except OSError as exc:
            raise SandboxFailedError(
                f"The sandbox could not start the command ({type(exc).__name__}).", sandbox=self.backend().os_layer
            ) from None


def _removed_if_empty(directory: str) -> bool:
    """Remove a call's temp dir at once when the command left nothing in it (most do): no thread hop."""
    try:
        os.rmdir(directory)
    except OSError:
        return False
    return True


_services: weakref.WeakKeyDictionary[Workspace, ExecService] = weakref.WeakKeyDictionary()
_services_lock = threading.Lock()


def exec_service(workspace: Workspace) -> ExecService:
    """The service of a workspace, built once."""
    with _services_lock:
        service = _services.get(workspace)
        if service is None:
            service = ExecService(workspace)
            _services[workspace] = service
        return service
