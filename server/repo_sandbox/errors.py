"""The graded error model (DESIGN.md §4): one base class, one subclass per stable error code.

Tool bodies raise these; `runtime.pipeline` turns them into MCP results in one place. A message is
written for the model: it says what happened in terms of the caller's own arguments and never reveals
host paths outside the root, the deny-list contents or a stack trace.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, ClassVar


class Category(StrEnum):
    """What the agent should do next."""

    INVALID_ARGUMENT = "invalid_argument"
    """Fix the arguments and call again."""
    NOT_FOUND = "not_found"
    """Search first, then retry with a real path."""
    PERMISSION_DENIED = "permission_denied"
    """Do not retry; choose another approach."""
    LIMIT_EXCEEDED = "limit_exceeded"
    """Narrow the request."""
    UNAVAILABLE = "unavailable"
    """Wait `details.retry_after_s`, or change approach."""
    EXECUTION_FAILED = "execution_failed"
    """The operation started and failed."""
    INTERNAL = "internal"
    """A server bug: report `details.incident_id`."""


class SandboxError(Exception):
    """Base of every expected failure; each subclass fixes `code`, `category` and `retryable`."""

    code: ClassVar[str] = "internal_error"
    category: ClassVar[Category] = Category.INTERNAL
    retryable: ClassVar[bool] = False
    default_hint: ClassVar[str] = ""

    def __init__(self, message: str, *, hint: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        self.details: dict[str, Any] = details

    def to_payload(self) -> dict[str, Any]:
        """The `{"error": {...}}` object sent to the client."""
        return {
            "error": {
                "code": self.code,
                "category": str(self.category),
                "message": self.message,
                "retryable": self.retryable,
                "hint": self.hint,
                "details": self.details,
            }
        }


# invalid_argument ------------------------------------------------------------------------------


class InvalidArgumentsError(SandboxError, ValueError):
    """An argument is missing, of the wrong type, out of bounds or malformed."""

    code = "invalid_arguments"
    category = Category.INVALID_ARGUMENT
    default_hint = "Check the tool's input schema and fix the named field."


class InvalidRegexError(SandboxError, ValueError):
    """The search pattern is not valid in the supported regex dialect."""

    code = "invalid_regex"
    category = Category.INVALID_ARGUMENT
    default_hint = (
        "Use Rust-regex syntax (no backreferences, no look-around), or set fixed_strings=true to search "
        "for the text literally."
    )


class InvalidGlobError(SandboxError, ValueError):
    """A glob pattern cannot be compiled."""

    code = "invalid_glob"
    category = Category.INVALID_ARGUMENT
    default_hint = "Use globs like '*.py', 'src/**/*.ts' or '*.{js,ts}'; close every '[' and '{'."


class NotAFileError(SandboxError, ValueError):
    """The path names a directory (or other non-file) where a file was expected."""

    code = "not_a_file"
    category = Category.INVALID_ARGUMENT
    default_hint = "Use search_files to list the files inside a directory, then read one of them."


class NotADirError(SandboxError, ValueError):
    """The path names a file where a directory was expected."""

    code = "not_a_directory"
    category = Category.INVALID_ARGUMENT
    default_hint = "Pass a directory, or use read_file for a single file."


class BinaryFileError(SandboxError, ValueError):
    """The file looks binary (NUL bytes in its first 8 KiB)."""

    code = "binary_file"
    category = Category.INVALID_ARGUMENT
    default_hint = "Binary files cannot be read as text; use count_lines or search_files to learn about it."


class CommandParseError(SandboxError, ValueError):
    """The command line uses shell syntax outside the supported subset."""

    code = "command_parse_error"
    category = Category.INVALID_ARGUMENT
    default_hint = "Use a single command or a '|' pipeline of simple commands, without shell operators."


# not_found -------------------------------------------------------------------------------------


class NotFoundError(SandboxError, FileNotFoundError):
    """Nothing exists at the path."""

    code = "not_found"
    category = Category.NOT_FOUND
    default_hint = "Use search_files with a glob such as '**/name*' to find the right path, then retry."


# permission_denied -----------------------------------------------------------------------------


class PathOutsideRootError(SandboxError, PermissionError):
    """The path, or a symlink on it, leads outside the repository root."""

    code = "path_outside_root"
    category = Category.PERMISSION_DENIED
    default_hint = "Use a path relative to the repository root, e.g. 'src/main.py'."


class PathDeniedError(SandboxError, PermissionError):
    """The path matches the operator's deny-list."""

    code = "path_denied"
    category = Category.PERMISSION_DENIED
    default_hint = "This path is protected by the server policy; do not retry. Work with other files."


class SpecialFileError(SandboxError, PermissionError):
    """The path is a FIFO, socket, device or a hard link the policy refuses."""

    code = "special_file"
    category = Category.PERMISSION_DENIED
    default_hint = "Only regular files and directories can be used; choose another file."


class CommandNotAllowedError(SandboxError, PermissionError):
    """The program or shell construct is not allowed by the policy."""

    code = "command_not_allowed"
    category = Category.PERMISSION_DENIED
    default_hint = "Read repo-sandbox://policy for the allowed programs, or use a dedicated tool."


class ArgumentNotAllowedError(SandboxError, PermissionError):
    """An option or operand of an allowed program is not allowed."""

    code = "argument_not_allowed"
    category = Category.PERMISSION_DENIED
    default_hint = "Drop the option named in details, or use a dedicated tool."


class ApprovalDeniedError(SandboxError, PermissionError):
    """The user declined to approve the command."""

    code = "approval_denied"
    category = Category.PERMISSION_DENIED
    default_hint = "The user said no; do not retry the same command."


class ApprovalRequiredError(SandboxError, PermissionError):
    """The command needs approval and the client cannot ask the user."""

    code = "approval_required"
    category = Category.PERMISSION_DENIED
    default_hint = "This command needs a human's approval, which this client cannot request. Choose another approach."


# limit_exceeded --------------------------------------------------------------------------------


class FileTooLargeError(SandboxError):
    """The file is larger than `limits.max_file_bytes`, for whole-file work (search_text of that one file)."""

    code = "file_too_large"
    category = Category.LIMIT_EXCEEDED
    default_hint = (
        "search_text and count_lines skip files over details.max_file_bytes. read_file reads any line range "
        "of it (offset, limit), and execute_bash can search it: grep -n PATTERN FILE."
    )


class TimeoutExceededError(SandboxError, TimeoutError):
    """The operation ran out of time."""

    code = "timeout"
    category = Category.LIMIT_EXCEEDED
    default_hint = "Narrow the request (a smaller path, a more specific pattern) and try again."


class BudgetExhaustedError(SandboxError):
    """The session spent its budget of calls, output bytes or exec seconds."""

    code = "budget_exhausted"
    category = Category.LIMIT_EXCEEDED
    default_hint = "The session budget is spent; finish with what you have."


class TooManyCommandsError(SandboxError):
    """Too many execute_bash commands are running, or running ones hold the exec budget that is left."""

    code = "too_many_commands"
    category = Category.LIMIT_EXCEEDED
    retryable = True
    default_hint = "Wait `details.retry_after_s` for a running command to finish, then try again."


# unavailable -----------------------------------------------------------------------------------


class CircuitOpenError(SandboxError):
    """Calls like this one failed repeatedly; the breaker blocks them for a while."""

    code = "circuit_open"
    category = Category.UNAVAILABLE
    retryable = False  # the same call is refused until the breaker's trial; "retry" would contradict the hint
    default_hint = "Change the approach: use other arguments or another tool (details.last_error says what failed)."


class RepeatedCallError(SandboxError):
    """The same call was repeated too many times in a row."""

    code = "repeated_call"
    category = Category.UNAVAILABLE
    retryable = True
    default_hint = "The result has not changed; use what you already have or change the arguments."


# execution_failed ------------------------------------------------------------------------------


class IOFailureError(SandboxError, OSError):
    """Reading from the filesystem failed."""

    code = "io_error"
    category = Category.EXECUTION_FAILED
    retryable = True
    default_hint = "The filesystem reported an error; try again, or try another path."


class SandboxFailedError(SandboxError):
    """The OS sandbox could not start the command."""

    code = "sandbox_failed"
    category = Category.EXECUTION_FAILED
    default_hint = "The sandbox could not run this command; use the read-only tools instead."


class KilledError(SandboxError):
    """The command was killed (by a signal or a resource limit)."""

    code = "killed"
    category = Category.EXECUTION_FAILED
    default_hint = "The command was killed by a resource limit; run something smaller."


# internal --------------------------------------------------------------------------------------


class InternalError(SandboxError):
    """An unexpected server failure; only an incident id reaches the client."""

    code = "internal_error"
    category = Category.INTERNAL
    default_hint = "This is a server bug. Report the incident id to the operator; try another approach meanwhile."

    @classmethod
    def new_incident(cls) -> InternalError:
        incident_id = uuid.uuid4().hex[:12]
        return cls(f"Internal error (incident {incident_id}).", incident_id=incident_id)


ALL_ERRORS: tuple[type[SandboxError], ...] = (
    InvalidArgumentsError,
    InvalidRegexError,
    InvalidGlobError,
    NotAFileError,
    NotADirError,
    BinaryFileError,
    CommandParseError,
    NotFoundError,
    PathOutsideRootError,
    PathDeniedError,
    SpecialFileError,
    CommandNotAllowedError,
    ArgumentNotAllowedError,
    ApprovalDeniedError,
    ApprovalRequiredError,
    FileTooLargeError,
    TimeoutExceededError,
    BudgetExhaustedError,
    TooManyCommandsError,
    CircuitOpenError,
    RepeatedCallError,
    IOFailureError,
    SandboxFailedError,
    KilledError,
    InternalError,
)
"""Every error class, for documentation and tests (codes are unique)."""
