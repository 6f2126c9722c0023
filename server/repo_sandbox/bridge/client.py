"""A small async client for an OpenAI-compatible `/v1/chat/completions` endpoint (httpx2, no SDK).

Retries: a 408/409/429/5xx answer or a transport error (refused connection, timeout, broken response) is
retried up to `max_retries` times with exponential backoff and jitter; a `Retry-After` (or OpenAI's
`retry-after-ms`) is honoured exactly, and one longer than `retry_max_s` ends the retries at once. Any other
4xx is final. Redirects are not followed, so the API key only ever goes to the configured base URL.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, Final, Self

import anyio
import httpx2

from repo_sandbox import __version__
from repo_sandbox.bridge.errors import ChatRejectedError, ChatResponseError, ChatUnavailableError
from repo_sandbox.bridge.turn import AssistantTurn, parse_turn
from repo_sandbox.config.model import BridgeConfig

RETRYABLE_STATUS: Final = frozenset({408, 409, 429})
"""Besides every 5xx: request timeout, conflict (OpenAI's "retry"), rate limited."""

MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
"""A larger response body is refused instead of being held in memory."""

_MAX_SERVER_MESSAGE: Final = 300


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """Where and how to reach the chat endpoint."""

    base_url: str
    """E.g. `https://api.openai.com/v1`; requests go to `<base_url>/chat/completions`."""
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    max_retries: int = 4
    retry_initial_s: float = 0.5
    retry_max_s: float = 30.0
    tool_choice: str = "auto"

    def __post_init__(self) -> None:
        url = httpx2.URL(self.base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base URL must be an http(s) URL, got {self.base_url!r}")

    @classmethod
    def from_config(cls, config: BridgeConfig, env: Mapping[str, str] | None = None) -> ChatSettings:
        """Settings from the `[bridge]` section; the key is `api_key`, else the env var named by `api_key_env`."""
        env = os.environ if env is None else env
        api_key = config.api_key.get_secret_value()
        if not api_key and config.api_key_env:
            api_key = env.get(config.api_key_env, "")
        return cls(
            base_url=config.base_url,
            model=config.model,
            api_key=api_key or None,
            timeout_s=config.timeout_s,
            connect_timeout_s=config.connect_timeout_s,
            max_retries=config.max_retries,
            retry_initial_s=config.retry_initial_s,
            retry_max_s=config.retry_max_s,
            tool_choice=config.tool_choice,
        )

    @property
    def endpoint(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, else `Retry-After` (seconds or an HTTP date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) * scale)
        except ValueError:
            pass
        if scale == 1.0:
            try:
                when = parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                return None
            return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return None


def backoff_delay(attempt: int, initial_s: float, max_s: float, jitter: float) -> float:
    """Wait before retry number `attempt + 1`: `initial * 2**attempt`, capped, minus up to 25 % (`jitter` in [0, 1))."""
    return min(max_s, initial_s * 2**attempt) * (1 - 0.25 * jitter)


def _server_message(body: bytes) -> str:
    """The endpoint's own error text (OpenAI's `{"error": {"message": ...}}` or plain text), short and printable."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error: Any = data.get("error", data.get("message", text))  # pyright: ignore[reportUnknownMemberType]
        if isinstance(error, dict):
            error = error.get("message", json.dumps(error))  # pyright: ignore[reportUnknownMemberType]
        text = str(error)  # pyright: ignore[reportUnknownArgumentType]
    text = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return text[:_MAX_SERVER_MESSAGE] + ("…" if len(text) > _MAX_SERVER_MESSAGE else "")


Sleep = Callable[[float], Awaitable[None]]


class ChatClient:
    """POSTs chat completion requests, retrying what may succeed later. Use as `async with ChatClient(...)`."""

    def __init__(
        self,
        settings: ChatSettings,
        *,
        sleep: Sleep = anyio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings
        self._sleep = sleep
        self._jitter = jitter
        headers = {"User-Agent": f"repo-sandbox/{__version__}", "Accept": "application/json"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        self._http = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            follow_redirects=False,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def chat_with_tools(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        *,
        tool_choice: str | None = None,
        **params: Any,
    ) -> AssistantTurn:
        """One chat completion offering `tools`; `params` (e.g. temperature) go into the request body.

        Raises:
            ChatRejectedError, ChatUnavailableError, ChatResponseError.
        """
        body: dict[str, Any] = {"model": self.settings.model, "messages": list(messages), **params}
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = tool_choice or self.settings.tool_choice
        return parse_turn(await self.create(body))

    async def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST `body` to the endpoint with retries; the decoded JSON answer."""
        settings = self.settings
        for attempt in range(settings.max_retries + 1):
            try:
                status, headers, content = await self._post(body)
            except httpx2.RequestError as exc:  # transport errors, timeouts, undecodable bodies
                failure = ChatUnavailableError(
                    f"Could not get an answer from the chat endpoint ({type(exc).__name__}).",
                    attempts=attempt + 1,
                )
                retry_after = None
            else:
                if 200 <= status < 300:
                    return _decode_json(content)
                message = f"The chat endpoint answered HTTP {status}: {_server_message(content)}"
                if status not in RETRYABLE_STATUS and status < 500:
                    raise ChatRejectedError(message, status=status)
                retry_after = parse_retry_after(headers)
                failure = ChatUnavailableError(message, status=status, attempts=attempt + 1, retry_after_s=retry_after)
            if attempt == settings.max_retries:
                raise failure
            if retry_after is None:
                delay = backoff_delay(attempt, settings.retry_initial_s, settings.retry_max_s, self._jitter())
            elif retry_after <= settings.retry_max_s:
                delay = retry_after
            else:
                raise failure
            await self._sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _post(self, body: Mapping[str, Any]) -> tuple[int, Mapping[str, str], bytes]:
        # Serialised here: a lone surrogate (an undecodable file name, a mis-decoded argv) becomes '?' instead
        # of failing the request.
        content = json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")
        headers = {"Content-Type": "application/json"}
        async with self._http.stream("POST", self.settings.endpoint, content=content, headers=headers) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise ChatResponseError(
                        f"The chat endpoint's answer exceeds {MAX_RESPONSE_BYTES} bytes.", status=response.status_code
                    )
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)


def _decode_json(content: bytes) -> dict[str, Any]:
    try:
        data = json.loads(content)
    except ValueError:
        raise ChatResponseError("The chat endpoint's answer is not JSON.", size=len(content)) from None
    if not isinstance(data, dict):
        raise ChatResponseError("The chat endpoint's answer is not a JSON object.")
    return data  # pyright: ignore[reportUnknownVariableType]
