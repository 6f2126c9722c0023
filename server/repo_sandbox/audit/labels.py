"""The masks that replace secrets, `[REDACTED:kind]` or shorter; used by the rules and by the remembered secrets."""

from __future__ import annotations


def mask_for(kind: str, secret: str) -> str:
    """`[REDACTED:kind]`, or a shorter mask when that would be longer than the secret."""
    for mask in (f"[REDACTED:{kind}]", "[REDACTED]", "***"):
        if len(mask) <= len(secret):
            return mask
    return "*" * len(secret)


def is_mask(value: str) -> bool:
    return value.startswith("[REDACTED") or (bool(value) and value.strip("*") == "")
