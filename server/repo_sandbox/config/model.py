"""The operator's policy as pydantic models (DESIGN.md §5). Unknown keys are rejected everywhere."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from repo_sandbox.config.exec_model import ExecConfig

DEFAULT_DENY: Final[tuple[str, ...]] = (
    ".git/",
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    "credentials.json",
    ".docker/config.json",
    "*.tfstate",
    "secrets.y*ml",
)
"""Deny globs (gitignore syntax) applied by every tool: git internals, dotenv files, keys, credentials."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


class ServerConfig(_Section):
    """How the server talks to clients."""

    transport: Literal["stdio"] = "stdio"
    """Transport to serve. stdio is the only one in this release."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    """Log level for the server's own log on stderr."""


class WorkspaceConfig(_Section):
    """The one repository the server exposes, and what in it stays hidden."""

    root: str = "."
    """Repository root. Relative paths are resolved against the config file's directory (or the cwd)."""
    deny: list[str] = Field(default_factory=lambda: list(DEFAULT_DENY))
    """Deny globs (gitignore syntax, case-insensitive). A denied path never appears in any result."""
    extra_deny: list[str] = Field(default_factory=list[str])
    """More deny globs, added to `deny` (so the defaults can be kept while adding your own)."""
    respect_gitignore: bool = True
    """Honour .gitignore and .ignore files (nested ones too) unless a call sets include_ignored."""
    include_hidden: bool = False
    """Default for the tools' include_hidden argument."""
    allow_hard_links: bool = False
    """Allow reading files with more than one hard link (a hard link can point at a file outside the root)."""
    max_depth: int = Field(default=64, ge=1, le=1024)
    """Deepest directory level a walk descends into."""
    max_walk_entries: int = Field(default=1_000_000, ge=1)
    """Most directory entries one walk visits; beyond it results are marked truncated."""

    @property
    def effective_deny(self) -> list[str]:
        return [*self.deny, *self.extra_deny]


class LimitsConfig(_Section):
    """Size and time limits that bound every result."""

    max_file_bytes: int = Field(default=100 * 1024 * 1024, ge=1)
    """read_file refuses larger files (file_too_large); search_text skips them."""
    max_output_bytes: int = Field(default=128 * 1024, ge=4096)
    """Largest serialised result of one call; longer results are truncated and say how to continue."""
    max_results: int = Field(default=1000, ge=1, le=100_000)
    """Upper bound for the `limit` argument of the listing tools."""
    max_line_chars: int = Field(default=2000, ge=80)
    """Longer lines are cut with a visible marker."""
    default_timeout_s: float = Field(default=30.0, gt=0)
    """Default time limit of a call."""
    max_timeout_s: float = Field(default=120.0, gt=0)
    """Largest time limit a call may ask for."""
    regex_timeout_s: float = Field(default=10.0, gt=0)
    """Time budget of one search_text call's regex matching; a pattern that exceeds it gets `timeout`."""

    @model_validator(mode="after")
    def _timeouts_ordered(self) -> LimitsConfig:
        if self.default_timeout_s > self.max_timeout_s:
            raise ValueError("default_timeout_s must not exceed max_timeout_s")
        return self


class Settings(_Section):
    """The whole effective policy."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    exec: ExecConfig = Field(default_factory=ExecConfig)
