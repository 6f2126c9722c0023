"""When are two calls "the same call"? Argument normalisation and the similarity measure of the guard.

Normalisation: arguments that equal the tool's default are dropped, so `{"path": "a"}` and
`{"path": "a", "offset": 1}` (1 being the default) are the same call. Arguments that are not a JSON object
are kept whole under the key "(arguments)".

Similarity of two normalised argument objects, from 0 to 1: the weighted Jaccard index
(sum of the smaller counts / sum of the larger counts) of their token multisets. Each scalar value is cut
into tokens: runs of letters and digits, and single punctuation characters, each prefixed with its key
path (`path:src`, `path:/`, `path:main`, `path:.`, `path:py`; list items use `key[]`). Examples at the
default threshold 0.7:
- identical calls, or calls differing in key order or default-valued arguments: 1.0 (same);
- `{"path": "./src/missing.py"}` vs `{"path": "src/missing.py"}`: 0.71 (same);
- `git log --oneline -n 5` vs `... -n 6` as a command: 0.78 (same);
- `{"path": "src/mian.py"}` vs `{"path": "src/main.py"}`: 0.67 (different: fixing a typo is a new call);
- `{"pattern": "foo("}` vs `{"pattern": "foo\\("}` (escaping the regex): 0.67 (different);
- `{"pattern": "foo("}` vs the same plus `"fixed_strings": true`: 0.67 (different: a change of approach).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Final

from pydantic_core import PydanticUndefined

from repo_sandbox.tools.spec import ToolSpec

MAX_TOKENS_PER_VALUE: Final = 256
"""Only this many leading tokens of one value are compared (keeps the measure cheap for huge arguments)."""

_TOKEN = re.compile(r"\w+|[^\w\s]")

Arguments = dict[str, Any]


def normalise_arguments(spec: ToolSpec | None, arguments: Any) -> Arguments:
    """The arguments as the guard compares them: a dict without the values equal to the tool's defaults
    (`spec` None, an unknown tool: every value kept)."""
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        return {"(arguments)": arguments}
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
    ta, tb = tokens(a), tokens(b)
    larger = sum((ta | tb).values())
    return sum((ta & tb).values()) / larger if larger else 1.0


def tokens(arguments: Arguments) -> Counter[str]:
    """The key-prefixed token multiset of an argument object (see the module docstring)."""
    counts: Counter[str] = Counter()
    _add_tokens(counts, "", arguments)
    return counts


def _add_tokens(counts: Counter[str], prefix: str, value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            _add_tokens(counts, f"{prefix}.{key}" if prefix else str(key), item)  # pyright: ignore[reportUnknownArgumentType]
        return
    if isinstance(value, list):
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            _add_tokens(counts, f"{prefix}[]", item)
        return
    text = value if isinstance(value, str) else json.dumps(value)
    pieces = _TOKEN.findall(text)[:MAX_TOKENS_PER_VALUE]
    counts.update(f"{prefix}:{piece}" for piece in pieces or [""])


def _same(x: Any, y: Any) -> bool:
    """Equality that does not confuse `True` with `1` (JSON keeps them apart)."""
    return type(x) is type(y) and x == y


def describe(arguments: Arguments, max_chars: int = 160) -> str:
    """A short JSON rendering for messages and tool descriptions."""
    text = canonical(arguments)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"
