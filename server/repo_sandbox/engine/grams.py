"""A file's content signature: which 4-byte sequences it holds, as a small Bloom filter (one hash).

Every 4-byte window of the file is read as a native-order unsigned 32-bit number (four `array("I")` views
of the file, at offsets 0..3, cover every window without a Python loop per byte); the distinct numbers,
taken modulo a prime about `BITS_PER_GRAM` times their count, are the bits set. A search whose matches all
contain a literal (`Query.required`) cannot match in a file whose filter lacks one of the literal's
windows: a filter never says "absent" of a window the file holds, so skipping such a file changes no
result. About one bit in five is set, so each window of a literal that is not there is mistaken for
present one time in five; a literal of n bytes has n - 3 windows.
"""

from __future__ import annotations

import sys
from array import array
from collections import deque
from dataclasses import dataclass
from itertools import repeat
from typing import Final

GRAM_BYTES: Final = 4
BITS_PER_GRAM: Final = 4
_PRIMES: Final = (
    61, 127, 251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65521, 131071, 262139, 524287, 1048573, 2097143,
    4194301, 8388593,
)  # fmt: skip
"""Filter sizes in bits: primes just under powers of two (a prime modulus spreads the windows' numbers)."""
PIECE_BYTES: Final = 64 * 1024
"""Windows are gathered a piece at a time, so that no single C call holds the interpreter for long."""
_AS_DIGITS: Final = bytes.maketrans(b"\x00\x01", b"01")


def windows(data: bytes) -> set[int]:
    """The distinct 4-byte windows of `data`, as native-order unsigned 32-bit numbers."""
    found: set[int] = set()
    for start in range(0, max(len(data) - GRAM_BYTES + 1, 0), PIECE_BYTES):
        piece = data[start : start + PIECE_BYTES + GRAM_BYTES - 1]
        for shift in range(GRAM_BYTES):
            end = shift + (len(piece) - shift) // GRAM_BYTES * GRAM_BYTES
            if end > shift:
                found.update(array("I", piece[shift:end]))
    return found


@dataclass(frozen=True, slots=True)
class Signature:
    modulus: int
    bits: int
    """Bit `w % modulus` is set for every window `w` of the file."""

    @classmethod
    def of(cls, data: bytes) -> Signature:
        found = windows(data)
        wanted = BITS_PER_GRAM * len(found)
        modulus = next((prime for prime in _PRIMES if prime >= wanted), _PRIMES[-1])
        flags = bytearray(modulus)
        deque(map(flags.__setitem__, map(modulus.__rmod__, found), repeat(1)), maxlen=0)
        return cls(modulus, int(flags[::-1].translate(_AS_DIGITS), 2))

    @classmethod
    def from_bytes(cls, modulus: int, packed: bytes) -> Signature:
        return cls(modulus, int.from_bytes(packed, "little"))

    def to_bytes(self) -> bytes:
        return self.bits.to_bytes((self.modulus + 7) // 8, "little")


class Probe:
    """The windows of a required literal, and for each filter size the bits they set (computed once)."""

    __slots__ = ("_masks", "windows")

    def __init__(self, literal: bytes) -> None:
        self.windows = frozenset(
            int.from_bytes(literal[i : i + GRAM_BYTES], sys.byteorder) for i in range(len(literal) - GRAM_BYTES + 1)
        )
        self._masks: dict[int, int] = {}

    @classmethod
    def for_literal(cls, literal: bytes | None) -> Probe | None:
        """A probe for a literal long enough to have a window; None otherwise (every file may match)."""
        return cls(literal) if literal is not None and len(literal) >= GRAM_BYTES else None

    def admits(self, signature: Signature) -> bool:
        """False only when the file provably lacks the literal."""
        mask = self._masks.get(signature.modulus)
        if mask is None:
            mask = 0
            for window in self.windows:
                mask |= 1 << (window % signature.modulus)
            self._masks[signature.modulus] = mask
        return signature.bits & mask == mask
