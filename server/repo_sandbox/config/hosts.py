"""The shapes of `[server] allowed_hosts` and `allowed_origins` entries, parsed the one way both the config
check and the Host/Origin check (`transports.origin`) read them."""

from __future__ import annotations

from urllib.parse import urlsplit


def split_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` -> (lower-case name, port); IPv6 literals keep their brackets. None if malformed."""
    value = value.strip().lower()
    if not value or any(char in value for char in " /@\\?#"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, sep, port_text = value.partition(":")
        rest = f":{port_text}" if sep else ""
    if not rest:
        return name, None
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
        return None
    port = int(rest[1:])
    return (name, port) if 0 < port < 65536 else None


def origin_key(origin: str) -> tuple[str, str, int | None] | None:
    """`scheme://host[:port]` -> (scheme, lower-case host, port). None if malformed."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in ("http", "https") or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = split_host(parts.netloc)
    return None if host is None else (parts.scheme, *host)
