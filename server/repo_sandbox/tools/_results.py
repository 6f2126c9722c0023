"""Result models shared by the tools and the error payload model (the output-size meter is `meter`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repo_sandbox.errors import Category


class ResultModel(BaseModel):
    """Base of every result model: unknown fields are a bug, not data."""

    model_config = ConfigDict(extra="forbid")


class Paged(ResultModel):
    truncated: bool = Field(description="True when more results exist than were returned.")
    next_offset: int | None = Field(description="Pass this as `offset` to get the next page; null when complete.")


class ErrorBody(ResultModel):
    code: str = Field(description="Stable error identifier, e.g. 'path_outside_root'.")
    category: Category = Field(description="What the agent should do next.")
    message: str
    retryable: bool = Field(description="Whether the same call may succeed later.")
    hint: str = Field(description="A concrete fix.")
    details: dict[str, Any] = Field(default_factory=dict[str, Any])


class ToolFailure(ResultModel):
    """The graded error payload (DESIGN.md §4)."""

    error: ErrorBody


def page_offsets(offset: int, returned: int, more: bool) -> tuple[bool, int | None]:
    """(truncated, next_offset) for a page that started at `offset` and returned `returned` items."""
    return (True, offset + returned) if more else (False, None)
