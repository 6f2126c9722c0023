"""Graded errors of the bridge itself: the chat endpoint failed, or the tool loop ran out of rounds.

They share the tool errors' shape (`SandboxError`: code, category, retryable, hint, details) so a caller
handles both alike, but they never reach the model: tool failures are fed back to it as tool messages,
these end the loop. Messages never contain the API key or the request body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from repo_sandbox.errors import Category, SandboxError

if TYPE_CHECKING:
    from repo_sandbox.bridge.loop import Transcript


class ChatRejectedError(SandboxError, ValueError):
    """The endpoint refused the request (a 4xx other than 408/409/429): bad model, key or body."""

    code = "llm_request_rejected"
    category = Category.INVALID_ARGUMENT
    default_hint = "Check the model name, the API key and the base URL; retrying the same request will not help."


class ChatUnavailableError(SandboxError, ConnectionError):
    """The endpoint stayed unreachable, overloaded (5xx) or rate-limited (429) through every retry."""

    code = "llm_unavailable"
    category = Category.UNAVAILABLE
    retryable = True
    default_hint = "Wait `details.retry_after_s` (when given) and try again, or raise bridge.max_retries."


class ChatResponseError(SandboxError, ValueError):
    """The endpoint answered, but not with a chat completion this client understands."""

    code = "llm_bad_response"
    category = Category.EXECUTION_FAILED
    default_hint = "Check that the base URL points at an OpenAI-compatible /v1 API that supports tools."


class MaxRoundsExceededError(SandboxError):
    """The model still asked for tools after `max_rounds` chat requests; `transcript` holds the loop so far."""

    code = "max_rounds_exceeded"
    category = Category.LIMIT_EXCEEDED
    default_hint = "Ask a narrower question, or raise max_rounds (bridge.max_rounds, --max-rounds)."

    def __init__(self, max_rounds: int, transcript: Transcript, pending_tools: list[str], **details: Any) -> None:
        super().__init__(
            f"The model still asked for tools after {max_rounds} rounds; stopped without an answer.",
            max_rounds=max_rounds,
            pending_tools=pending_tools,
            **details,
        )
        self.transcript = transcript


BRIDGE_ERRORS: tuple[type[SandboxError], ...] = (
    ChatRejectedError,
    ChatUnavailableError,
    ChatResponseError,
    MaxRoundsExceededError,
)
"""Every bridge error class (their codes are distinct from the tool error codes)."""
