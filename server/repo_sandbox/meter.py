"""What a client receives, measured while a result is built: the output-size meter, and whether a path can be
carried at all. Shared by the tools, the search engines and execute_bash."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

_encode_string: Any = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring


class OutputMeter:
    """Tracks the serialised size of a result while it is built, so it never exceeds the cap.

    Costs are measured as the UTF-8 length of the JSON-escaped strings, which is what the client receives.
    """

    __slots__ = ("limit", "used")

    RESERVE = 1024
    """Bytes kept for the result's fixed fields (counts, flags, field names)."""

    def __init__(self, max_bytes: int) -> None:
        self.limit = max_bytes - self.RESERVE
        self.used = 0

    @staticmethod
    def cost(text: str) -> int:
        """Bytes of `text` as a JSON string (quotes included)."""
        return len(_encode_string(text).encode("utf-8", "surrogatepass"))

    @staticmethod
    def item_cost(item: BaseModel | str) -> int:
        """Exact bytes `item` adds to a JSON list, separator included (as `json.dumps` writes it)."""
        if isinstance(item, str):
            return OutputMeter.cost(item) + 2
        text = json.dumps(item.model_dump(mode="json"), ensure_ascii=False)
        return len(text.encode("utf-8", "surrogatepass")) + 2

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def try_add(self, cost: int) -> bool:
        """Account for `cost` bytes if they fit; False (and nothing added) otherwise."""
        if self.used + cost > self.limit:
            return False
        self.used += cost
        return True


def is_presentable(path: str) -> bool:
    """Whether a walked path can be shown to a client.

    A file name that is not valid UTF-8 decodes (surrogateescape) to lone surrogates, which JSON over MCP
    cannot carry: such files are left out of listings rather than breaking the whole response. So are names
    with a line break: the text of a result gives a path a line of its own, and rg's output (line by line)
    could not say where such a name ends (`engine.rgprocess` has rg skip them too).
    """
    if "\n" in path:
        return False
    if path.isascii():
        return True
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
