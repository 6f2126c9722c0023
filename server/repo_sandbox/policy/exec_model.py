"""The `[exec]` section: which programs execute_bash may run, how they are sandboxed and limited."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

EXEC_CHECK_LATER: Final = "exec_check_later"
"""Validation context key: leave the command policy's check (`validate_exec_config`, which loads the whole
policy and runs its examples) to its first use; `repo-sandbox` over stdio runs it right after the handshake."""

SandboxMode = Literal["auto", "bwrap", "bwrap-noproc", "landlock", "none"]
"""auto: the first that works of bwrap, bwrap-noproc (containers), landlock; none only when chosen (or nothing
else works, which is reported loudly)."""

DEFAULT_ALLOW: Final[tuple[str, ...]] = (
    "[",
    "awk",
    "base64",
    "basename",
    "cat",
    "column",
    "comm",
    "cut",
    "date",
    "diff",
    "dirname",
    "du",
    "echo",
    "expand",
    "expr",
    "false",
    "file",
    "find",
    "fmt",
    "fold",
    "gawk",
    "git",
    "grep",
    "head",
    "hexdump",
    "join",
    "jq",
    "ls",
    "md5sum",
    "nl",
    "numfmt",
    "od",
    "paste",
    "printenv",
    "printf",
    "pwd",
    "realpath",
    "rev",
    "rg",
    "sed",
    "seq",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "sleep",
    "sort",
    "stat",
    "tac",
    "tail",
    "test",
    "tr",
    "tree",
    "true",
    "uniq",
    "wc",
    "which",
    "xxd",
)
"""The read-only programs of research/sandbox-and-exec-policy.md, each under its built-in rule."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ProgramRuleConfig(_Section):
    """A program the operator adds (one without a built-in rule). Options are exact names."""

    flags: list[str] = Field(default_factory=list[str])
    """Options without a value, e.g. ["-a", "--all"]."""
    options_with_value: list[str] = Field(default_factory=list[str])
    """Options that take a value, e.g. ["-n", "--lines"]."""
    path_options: list[str] = Field(default_factory=list[str])
    """Options (among options_with_value) whose value is a path, jailed like an operand."""
    operands: Literal["paths", "strings", "none"] = "paths"
    """What the operands are: jailed paths, plain strings, or nothing."""
    forced_args: list[str] = Field(default_factory=list[str])
    """Arguments always inserted right after the program name."""
    any_arguments: bool = False
    """Skip all argument checks (the OS sandbox and limits still apply). Only for programs you fully trust."""
    allow_examples: list[str] = Field(default_factory=list[str])
    """Command lines that must be allowed; checked when the policy loads."""
    deny_examples: list[str] = Field(default_factory=list[str])
    """Command lines that must be refused by this rule; checked when the policy loads."""


class ExecConfig(_Section):
    """execute_bash: program policy, OS sandbox and resource limits."""

    enabled: bool = True
    """Offer execute_bash at all."""
    sandbox: SandboxMode = "auto"
    """OS sandbox: auto | bwrap | bwrap-noproc | landlock | none."""
    network: bool = False
    """Let commands use the network (never needed by the built-in programs)."""
    allow: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOW))
    """Programs that run without asking."""
    ask: list[str] = Field(default_factory=list[str])
    """Programs that run only after the user approves each command."""
    rules: dict[str, ProgramRuleConfig] = Field(default_factory=dict[str, ProgramRuleConfig])
    """Rules for programs without a built-in rule, by program name."""
    max_memory_mb: int = Field(default=1024, ge=64)
    """Address-space limit of each process (RLIMIT_AS), in MiB."""
    max_processes: int = Field(default=256, ge=8)
    """Process limit (RLIMIT_NPROC, and the cgroup pids.max when cgroups are usable)."""
    max_open_files: int = Field(default=1024, ge=32)
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    max_file_size_mb: int = Field(default=64, ge=1)
    """Largest file a process may write, in MiB (RLIMIT_FSIZE; only the sandbox's /tmp is writable)."""
    max_stages: int = Field(default=8, ge=1, le=32)
    """Most commands in one pipeline."""
    max_command_chars: int = Field(default=8192, ge=64)
    """Longest command line."""

    @model_validator(mode="after")
    def _policy_holds(self, info: ValidationInfo) -> ExecConfig:
        if isinstance(info.context, dict) and info.context.get(EXEC_CHECK_LATER):  # pyright: ignore[reportUnknownMemberType]
            return self  # `CommandPolicy.from_config` checks it before any command is judged
        from repo_sandbox.policy.commands import validate_exec_config

        validate_exec_config(self)
        return self
