"""When are two calls "the same call"? Argument normalisation and the similarity measure of the guard.

Normalisation: arguments that equal the tool's default are dropped, so `{"path": "a"}` and
`{"path": "a", "offset": 1}` (1 being the default) are the same call. Arguments that are not a JSON object
are kept whole under the key "(arguments)".

Similarity of two normalised argument objects, from 0 to 1: the mean, over every key either call sets, of
- 1 when both values are equal;
- for two strings, the character similarity `difflib.SequenceMatcher.ratio()` (2·matches / total length)
  over their first `COMPARED_CHARS` characters;
- 0 otherwise (a key only one call sets, different numbers, booleans, lists or objects).
So `{"path": "src/missing.py"}` vs `{"path": "src/missing.txt"}` is 0.83 (similar at the default 0.7),
while adding an argument that changes the approach (`"fixed_strings": true`) halves the score of a
one-argument call.
"""

from __future__ import annotations

import json
from difflib import SequenceMatcher
from typing import Any, Final

from pydantic_core import PydanticUndefined

from repo_sandbox.tools.registry import TOOLS_BY_NAME

COMPARED_CHARS: Final = 512
"""Only this many leading characters of a string argument are compared (bounds the quadratic matcher)."""

_MISSING: Final = object()

Arguments = dict[str, Any]


def normalise_arguments(tool: str, arguments: Any) -> Arguments:
    """The arguments as the guard compares them: a dict without the values equal to the tool's defaults."""
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        return {"(arguments)": arguments}
    spec = TOOLS_BY_NAME.get(tool)
    fields = spec.args_model.model_fields if spec is not None else {}
    normalised: Arguments = {}
    for key, value in arguments.items():  # pyright: ignore[reportUnknownVariableType]
        field = fields.get(str(key))  # pyright: ignore[reportUnknownArgumentType]
        if field is not None and field.default is not PydanticUndefined and _same(field.default, value):
            continue
        normalised[str(key)] = value  # pyright: ignore[reportUnknownArgumentType]
    return normalised


def canonical(arguments: Arguments) -> str:
    """A stable text form: equal for identical normalised arguments, whatever their key order."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def similarity(a: Arguments, b: Arguments) -> float:
    """How alike two normalised argument objects are, from 0 (nothing shared) to 1 (identical)."""
    keys = a.keys() | b.keys()
    if not keys:
        return 1.0
    return sum(_value_similarity(a.get(k, _MISSING), b.get(k, _MISSING)) for k in keys) / len(keys)


def _value_similarity(x: Any, y: Any) -> float:
    if x is _MISSING or y is _MISSING:
        return 0.0
    if _same(x, y):
        return 1.0
    if isinstance(x, str) and isinstance(y, str):
        return SequenceMatcher(None, x[:COMPARED_CHARS], y[:COMPARED_CHARS], autojunk=False).ratio()
    return 0.0


def _same(x: Any, y: Any) -> bool:
    """Equality that does not confuse `True` with `1` (JSON keeps them apart)."""
    return type(x) is type(y) and x == y


def describe(arguments: Arguments, max_chars: int = 160) -> str:
    """A short JSON rendering for messages and tool descriptions."""
    text = canonical(arguments)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"
