"""Secrets seen once, masked everywhere after: the values the patterns found (or sensitive keys held).

Some secrets are only recognisable in context (`aws_secret_access_key = <40 chars>`, `password=...`). Once a
value has been masked in a file or an event, it is remembered (in memory only, never written) and masked
wherever it appears again on its own: in the arguments of the call that found it (a search for the bare
value), in later events and in later results. Short values are not remembered (too likely to be words).
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from typing import Final

from repo_sandbox.audit.labels import is_mask, mask_for

MIN_CHARS: Final = 8
"""Shorter values are not remembered."""
MAX_ENTRIES: Final = 512
"""The oldest value is forgotten beyond this many."""


class KnownSecrets:
    """A bounded, thread-safe set of secret values, with the masking of their bare occurrences."""

    __slots__ = ("_lock", "_snapshot", "_values")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: OrderedDict[str, None] = OrderedDict()
        self._snapshot: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self._snapshot)

    def snapshot(self) -> tuple[str, ...]:
        return self._snapshot

    def add(self, values: Iterable[str]) -> None:
        fresh = [v for v in values if len(v) >= MIN_CHARS and "\n" not in v and not is_mask(v)]
        if not fresh:
            return
        with self._lock:
            for value in fresh:
                self._values[value] = None
                self._values.move_to_end(value)
            while len(self._values) > MAX_ENTRIES:
                self._values.popitem(last=False)
            self._snapshot = tuple(sorted(self._values, key=len, reverse=True))  # longest first

    def mask(self, text: str, counts: Counter[str] | None = None) -> str:
        """`text` with every remembered value masked (`[REDACTED:known_secret]` or shorter)."""
        for value in self._snapshot:
            if value in text:
                if counts is not None:
                    counts["known_secret"] += text.count(value)
                text = text.replace(value, mask_for("known_secret", value))
        return text
