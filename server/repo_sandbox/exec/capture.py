"""Bounded capture of a stream: keeps the head and the tail, counts what was dropped, never buffers more."""

from __future__ import annotations

from typing import Final

CUT_MARKER: Final = "\n[... {omitted} bytes omitted by repo-sandbox ...]\n"
"""Put where the middle of an over-long output was cut."""


class HeadTailBuffer:
    """The first `cap // 2` and the last `cap - cap // 2` bytes of everything fed."""

    __slots__ = ("_head", "_head_cap", "_tail", "_tail_cap", "total")

    def __init__(self, cap: int) -> None:
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]

    def parts(self) -> tuple[bytes, bytes]:
        """The kept head and tail."""
        return bytes(self._head), bytes(self._tail)

    def skip(self, count: int) -> None:
        """Count `count` bytes as fed and dropped (a gap another buffer cut); later bytes go to the tail."""
        if count > 0:
            self.total += count
            self._head_cap = len(self._head)

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    def text(self) -> str:
        """The captured bytes as text (invalid UTF-8 replaced), with a marker where bytes were dropped."""
        if not self.truncated:
            return bytes(self._head + self._tail).decode("utf-8", "replace")
        omitted = self.total - len(self._head) - len(self._tail)
        head = bytes(self._head).decode("utf-8", "replace")
        tail = bytes(self._tail).decode("utf-8", "replace")
        return head + CUT_MARKER.format(omitted=omitted) + tail


def fit_text(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut the middle of `text` to at most about `max_chars` characters; (text, was_cut)."""
    if len(text) <= max_chars:
        return text, False
    half = max(max_chars // 2 - 64, 0)
    omitted = len(text) - 2 * half
    return text[:half] + f"\n[... {omitted} characters omitted by repo-sandbox ...]\n" + text[len(text) - half :], True
