"""The operator's policy as pydantic models (DESIGN.md §5). Unknown keys are rejected everywhere."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from repo_sandbox.config.hosts import origin_key, split_host
from repo_sandbox.policy.deny import DEFAULT_DENY
from repo_sandbox.policy.exec_model import ExecConfig


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


class ServerConfig(_Section):
    """How the server talks to clients."""

    transport: Literal["stdio", "http"] = "stdio"
    """Transport to serve: stdio, or http (Streamable HTTP at /mcp, WebSocket at /ws, /healthz)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    """Log level for the server's own log on stderr."""
    result_text: Literal["compact", "json"] = "compact"
    """A tool result's text content: "compact" renders it as rg/cat -n/ls would print it (structuredContent keeps
    the typed object; errors are JSON either way); "json" is the structured object as JSON text."""
    # --- network transports (transport = "http"); see transports/http.py ---
    host: str = "127.0.0.1"
    """Address to listen on. A non-loopback address requires a token."""
    port: int = Field(default=8765, ge=0, le=65535)
    """TCP port to listen on (0 picks a free one)."""
    token_env: str = Field(default="REPO_SANDBOX_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Name of the environment variable holding the bearer token clients must present."""
    dns_rebinding_protection: bool = True
    """Check Host and Origin headers against the allowlists below (refused with 421 / 403)."""
    allowed_hosts: list[str] = Field(default_factory=list[str])
    """Extra Host values ("name" = any port, "name:port" = that port); loopback names are always allowed."""
    allowed_origins: list[str] = Field(default_factory=list[str])
    """Extra Origin values ("https://app.example.com"); http://localhost, 127.0.0.1 and [::1] are allowed."""
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    """Largest HTTP request body, WebSocket message or stdio line; larger ones are refused (413 / close 1009 /
    a JSON-RPC error)."""
    max_sessions: int = Field(default=64, ge=1)
    """Most concurrent sessions: stateful HTTP sessions and WebSocket connections together (then 503)."""
    max_connections: int = Field(default=256, ge=1)
    """Most concurrent TCP connections and in-flight HTTP requests (then 503)."""
    rate_per_s: float = Field(default=20.0, gt=0)
    """Sustained messages per second per session (a stateful HTTP session or a WebSocket connection)."""
    rate_burst: int = Field(default=40, ge=1)
    """Messages a session may send at once above the sustained rate (then 429 / a JSON-RPC error)."""
    address_rate_per_s: float = Field(default=500.0, gt=0)
    """Sustained HTTP requests and WebSocket handshakes per second from one client address, all sessions together."""
    address_rate_burst: int = Field(default=1000, ge=1)
    """Requests one client address may send at once above its sustained rate."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """Time a connection gets to send a complete request head; slower connections are closed."""
    body_timeout_s: float = Field(default=30.0, gt=0)
    """Time a client gets to send a request body (408 after it)."""
    send_timeout_s: float = Field(default=30.0, gt=0)
    """Longest a single write to a client may block (a client that stops reading is disconnected)."""
    session_idle_timeout_s: float = Field(default=600.0, gt=0)
    """Stateful HTTP sessions and WebSocket connections with no traffic for this long are closed."""
    shutdown_grace_s: float = Field(default=10.0, ge=0)
    """On SIGTERM: time in-flight calls get to finish before they are cancelled (and their processes killed)."""
    request_state_key_env: str = Field(default="REPO_SANDBOX_STATE_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable with the key sealing 2026-07-28 request state; replicas must share it."""

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_well_formed(cls, hosts: list[str]) -> list[str]:
        for entry in hosts:
            if split_host(entry) is None:
                raise ValueError(f"not a host[:port]: {entry!r}")
        return hosts

    @field_validator("allowed_origins")
    @classmethod
    def _origins_well_formed(cls, origins: list[str]) -> list[str]:
        for entry in origins:
            if origin_key(entry) is None:
                raise ValueError(f"not a scheme://host[:port] origin: {entry!r}")
        return origins


class WorkspaceConfig(_Section):
    """The one repository the server exposes, and what in it stays hidden."""

    root: str = "."
    """Repository root. Relative paths are resolved against the config file's directory (or the cwd)."""
    _root_given: bool = PrivateAttr(default=False)

    @property
    def root_given(self) -> bool:
        """The root was chosen (flag, environment or file), not the default: client roots may only narrow it."""
        return self._root_given

    def mark_root_given(self, given: bool) -> None:
        self._root_given = given

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
    tree_index: Literal["watch", "stat", "off"] = "watch"
    """Reuse the walk's listings between calls: "watch" (inotify tells what changed; on a network or FUSE file
    system, or where inotify is unavailable, directories are re-stat'ed instead), "stat" (always re-stat),
    "off" (walk on every call)."""
    facts_cache: bool = True
    """Keep what the tree index learnt of each file (binary or text, line count, by stat identity) in the user's
    cache directory when the server stops, so that the next run on this repository does not read every file
    again for its first search or count (`$XDG_CACHE_HOME/repo-sandbox/facts`; needs `tree_index`)."""

    @property
    def effective_deny(self) -> list[str]:
        return [*self.deny, *self.extra_deny]


class LimitsConfig(_Section):
    """Size and time limits that bound every result."""

    max_file_bytes: int = Field(default=100 * 1024 * 1024, ge=1)
    """search_text and count_lines skip and count larger files (search_text of one such file: file_too_large);
    read_file still reads any line range of them."""
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
    """Time budget of one search_text call: the Python engine's regex matching, or ripgrep's whole search;
    a search that exceeds it gets `timeout` (and its rg is killed)."""

    @model_validator(mode="after")
    def _timeouts_ordered(self) -> LimitsConfig:
        if self.default_timeout_s > self.max_timeout_s:
            raise ValueError("default_timeout_s must not exceed max_timeout_s")
        return self


class AuditConfig(_Section):
    """The audit trail: one JSONL event per tool call and per policy decision, and secret masking."""

    path: str = ""
    """Where events go: a JSONL file (size-rotated), "-" for stderr, "" for off. Relative to the config file."""
    redact: bool = True
    """Redact events: sensitive keys, secret patterns, home-directory paths, partial ids. Env TRACE_SANITIZE too."""
    redact_output: bool = True
    """Mask recognised secrets in read_file, search_text and execute_bash results before the model sees them."""
    max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    """Rotate the audit file before it would grow past this many bytes."""
    backup_count: int = Field(default=5, ge=0, le=1000)
    """Rotated files kept (path.1 ... path.N); 0 starts the file afresh."""
    queue_size: int = Field(default=10_000, ge=16)
    """Events waiting for the writer thread; beyond it events are dropped and counted, calls never wait."""
    max_value_chars: int = Field(default=2000, ge=64)
    """Longer strings in an event are cut (after redaction)."""


class GuardConfig(_Section):
    """Agent-loop guard rails per client session: the circuit breaker and the repeated-call guard."""

    failure_threshold: int = Field(default=3, ge=1, le=1000)
    """Failed calls of one tool with similar arguments, in a row, that open the circuit for such calls."""
    window_s: float = Field(default=300.0, gt=0)
    """Only failures this recent count towards `failure_threshold` (seconds)."""
    similarity: float = Field(default=0.7, gt=0, le=1)
    """Arguments at least this similar (0..1, token Jaccard, see `runtime.similarity`) count as the same call."""
    recovery_s: float = Field(default=300.0, gt=0)
    """How long an open circuit blocks similar calls before letting one trial call through (half-open)."""
    repeat_threshold: int = Field(default=5, ge=1, le=1000)
    """Identical calls (same tool, same arguments) allowed in a row; the next one gets `repeated_call`."""


class BudgetConfig(_Section):
    """What one client session (connection) may spend. 0 means unlimited.

    The defaults stop a runaway loop without ending a normal long session; note that some clients keep one
    connection for their whole lifetime (a desktop app), so its budget covers every conversation in it.
    """

    max_calls: int = Field(default=10_000, ge=0)
    """Tool calls per session."""
    max_output_bytes: int = Field(default=128 * 1024 * 1024, ge=0)
    """Bytes of tool results (serialised JSON) per session."""
    max_exec_s: float = Field(default=3600.0, ge=0)
    """Seconds of execute_bash run time per session (a command gets no more time than is left). A command
    reserves its timeout when it starts; what it does not use is given back when it ends."""
    max_concurrent_exec: int = Field(default=4, ge=0)
    """execute_bash commands one session may run at once; more answer `too_many_commands`."""
    max_concurrent_exec_server: int = Field(default=16, ge=0)
    """execute_bash commands all sessions of the server may run at once; more answer `too_many_commands`."""
    degrade_below_bytes: int = Field(default=1024 * 1024, ge=0)
    """When less output budget than this is left, search_text answers with file names only and says so."""


class BridgeConfig(_Section):
    """The OpenAI function-calling bridge (`repo-sandbox ask`, `repo_sandbox.bridge`): which chat endpoint to use."""

    base_url: str = "https://api.openai.com/v1"
    """Base URL of an OpenAI-compatible API; requests go to `<base_url>/chat/completions`."""
    model: str = ""
    """Model name sent with every request (required by `ask`: here, REPO_SANDBOX_BRIDGE_MODEL or --model)."""
    api_key: SecretStr = SecretStr("")
    """API key. Prefer the env var REPO_SANDBOX_BRIDGE_API_KEY to a file; never printed (check-config masks it)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Env var read for the API key when `api_key` is empty; no key at all sends no Authorization header."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Time limit of one HTTP request (reading a slow model's answer included)."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    """Time limit for connecting to the endpoint."""
    max_retries: int = Field(default=4, ge=0, le=20)
    """Retries of one request after a 408/409/429/5xx answer or a connection error (exponential backoff, jitter)."""
    retry_initial_s: float = Field(default=0.5, ge=0)
    """First backoff wait; each retry doubles it (minus up to 25 % jitter)."""
    retry_max_s: float = Field(default=30.0, ge=0)
    """Longest wait before a retry; a longer Retry-After from the server ends the retries at once."""
    max_rounds: int = Field(default=10, ge=1, le=1000)
    """Most chat requests of one tool loop; a model still calling tools after them ends with max_rounds_exceeded."""
    tool_choice: Literal["auto", "required", "none"] = "auto"
    """The `tool_choice` sent with the tools."""


class SearchConfig(_Section):
    """Which engine search_text uses."""

    engine: Literal["auto", "ripgrep", "python"] = "auto"
    """"auto": ripgrep when a usable binary is found (else the Python engine); "ripgrep": the same, named
    explicitly; "python": always the built-in engine (both give the same results)."""
    ripgrep_path: str = ""
    """Absolute path of the rg binary to use; "" looks for `rg` on PATH, then the one the `ripgrep` wheel
    installed next to this Python."""
    keep_run_s: float = Field(default=60.0, ge=0, le=3600)
    """How long the run behind a search_text page waits for the next page of the same search (holding its rg
    process and a page or two of lines); 0: every page searches the tree again from the first file."""


class Settings(_Section):
    """The whole effective policy."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    guard: GuardConfig = Field(default_factory=GuardConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    bridge: BridgeConfig = Field(default_factory=BridgeConfig)
    exec: ExecConfig = Field(default_factory=ExecConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
