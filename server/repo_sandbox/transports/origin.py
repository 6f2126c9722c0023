"""DNS rebinding protection: the Host and Origin headers of /mcp and /ws must name this server.

A web page on evil.example that resolves to 127.0.0.1 makes the browser send `Host: evil.example` and
`Origin: http://evil.example`; both are refused. Unlike the SDK's own check, a Host without a port (a
proxy on port 80) matches an allowed name, and the name comparison is case-insensitive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from repo_sandbox.config.hosts import origin_key, split_host
from repo_sandbox.config.model import ServerConfig

LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "[::1]")
"""Host names that are always allowed (on any port): only this machine can reach them."""

_WILDCARD_ADDRESSES: Final = frozenset({"0.0.0.0", "::", "[::]", ""})


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
