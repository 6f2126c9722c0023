"""What the tools' argument models share: arguments are checked as their JSON Schema says, never coerced.

Pydantic's default (lax) mode would take `"limit": "10"`, `"limit": true` or `"include_hidden": "yes"`,
all of which the published input schema refuses; DESIGN.md §4 makes input that fails the schema an
`invalid_arguments` error. Strict mode refuses them. JSON Schema's `integer` is any number without a
fractional part, so `5.0` is still the integer 5 (a client's JSON encoder may write it so).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict


def _integral_number(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE_NUMBER: Final = BeforeValidator(_integral_number)
"""Metadata of an integer argument (`Annotated[int, Field(...), WHOLE_NUMBER]`, after its `Field`, or the
bounds leave the JSON Schema): an int, or a float with no fractional part; never a string or a boolean."""


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown arguments and values of the wrong JSON type are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)
