"""DNS rebinding protection: the Host and Origin headers of /mcp and /ws must name this server.

A web page on evil.example that resolves to 127.0.0.1 makes the browser send `Host: evil.example` and
`Origin: http://evil.example`; both are refused. Unlike the SDK's own check, a Host without a port (a
proxy on port 80) matches an allowed name, and the name comparison is case-insensitive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from repo_sandbox.config.model import ServerConfig

LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "[::1]")
"""Host names that are always allowed (on any port): only this machine can reach them."""

_WILDCARD_ADDRESSES: Final = frozenset({"0.0.0.0", "::", "[::]", ""})


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


@dataclass(frozen=True, slots=True)
class HostOriginPolicy:
    """The allowlists, resolved from `[server]`."""

    enabled: bool
    hosts: frozenset[tuple[str, int | None]]
    """(name, port) pairs; port None allows any port and none."""
    origins: frozenset[tuple[str, str, int | None]]
    """(scheme, name, port) triples; port None allows any port."""

    @classmethod
    def from_settings(cls, settings: ServerConfig) -> HostOriginPolicy:
        hosts: set[tuple[str, int | None]] = {(name, None) for name in LOOPBACK_NAMES}
        origins: set[tuple[str, str, int | None]] = {
            (scheme, name, None) for scheme in ("http", "https") for name in LOOPBACK_NAMES
        }
        bound = settings.host.strip().lower()
        if bound not in _WILDCARD_ADDRESSES:
            bound_name = f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound
            hosts.add((bound_name, None))
        for entry in settings.allowed_hosts:
            parsed = split_host(entry)
            if parsed is None:
                raise ValueError(f"[server] allowed_hosts: not a host[:port]: {entry!r}")
            hosts.add(parsed)
        for entry in settings.allowed_origins:
            key = origin_key(entry)
            if key is None:
                raise ValueError(f"[server] allowed_origins: not a scheme://host[:port] origin: {entry!r}")
            origins.add(key)
        return cls(settings.dns_rebinding_protection, frozenset(hosts), frozenset(origins))

    def host_allowed(self, host: str | None) -> bool:
        if not self.enabled:
            return True
        parsed = split_host(host or "")
        if parsed is None:
            return False
        name, port = parsed
        return (name, None) in self.hosts or (port is not None and (name, port) in self.hosts)

    def origin_allowed(self, origin: str | None) -> bool:
        """An absent Origin is a non-browser client; "null" and anything unlisted are refused."""
        if not self.enabled or origin is None:
            return True
        key = origin_key(origin)
        if key is None:
            return False
        scheme, name, port = key
        return (scheme, name, None) in self.origins or (port is not None and key in self.origins)
