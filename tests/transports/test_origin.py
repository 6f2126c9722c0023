"""DNS rebinding protection: which Host and Origin values pass (an attack table, grouped by trick)."""

from __future__ import annotations

import pytest

from repo_sandbox.config.hosts import split_host
from repo_sandbox.config.model import ServerConfig
from repo_sandbox.transports.origin import HostOriginPolicy

LOOPBACK = HostOriginPolicy.from_settings(ServerConfig())
PROXIED = HostOriginPolicy.from_settings(
    ServerConfig(
        host="0.0.0.0",
        allowed_hosts=["repo.tools.svc", "mcp.example.com:443"],
        allowed_origins=["https://app.example.com"],
    )
)


@pytest.mark.parametrize(
    ("policy", "host", "allowed"),
    [
        # loopback names, any port or none (the SDK's own check refuses a Host without a port)
        (LOOPBACK, "127.0.0.1:8765", True),
        (LOOPBACK, "127.0.0.1", True),
        (LOOPBACK, "localhost", True),
        (LOOPBACK, "LocalHost:1", True),
        (LOOPBACK, "[::1]:8765", True),
        # another name resolving to 127.0.0.1 (the rebinding attack itself)
        (LOOPBACK, "evil.example.com", False),
        (LOOPBACK, "evil.example.com:8765", False),
        # look-alikes and smuggling
        (LOOPBACK, "localhost.evil.com", False),
        (LOOPBACK, "127.0.0.1.nip.io", False),
        (LOOPBACK, "127.0.0.1@evil.com", False),
        (LOOPBACK, "evil.com#127.0.0.1", False),
        (LOOPBACK, "127.0.0.1:8765/evil", False),
        (LOOPBACK, "127.0.0.1 evil.com", False),
        (LOOPBACK, "127.0.0.1:", False),
        (LOOPBACK, "127.0.0.1:99999", False),
        (LOOPBACK, "127.0.0.1:0", False),
        (LOOPBACK, "[::1", False),
        (LOOPBACK, "::1", False),
        (LOOPBACK, "", False),
        (LOOPBACK, None, False),
        # operator-listed names: "name" = any port, "name:port" = that port only
        (PROXIED, "repo.tools.svc", True),
        (PROXIED, "repo.tools.svc:8765", True),
        (PROXIED, "mcp.example.com:443", True),
        (PROXIED, "mcp.example.com", False),
        (PROXIED, "mcp.example.com:8443", False),
        (PROXIED, "0.0.0.0:8765", False),
    ],
)
def test_host_allowlist(policy: HostOriginPolicy, host: str | None, allowed: bool) -> None:
    assert policy.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("policy", "origin", "allowed"),
    [
        # no Origin: not a browser
        (LOOPBACK, None, True),
        # loopback origins, any port
        (LOOPBACK, "http://localhost:6274", True),
        (LOOPBACK, "http://127.0.0.1", True),
        (LOOPBACK, "https://[::1]:8443", True),
        # foreign and opaque origins
        (LOOPBACK, "http://evil.example.com", False),
        (LOOPBACK, "null", False),
        (LOOPBACK, "file://", False),
        (LOOPBACK, "chrome-extension://abcdef", False),
        (LOOPBACK, "", False),
        # look-alikes
        (LOOPBACK, "http://localhost.evil.com", False),
        (LOOPBACK, "http://localhost@evil.com", False),
        (LOOPBACK, "http://localhost:6274/path", False),
        (LOOPBACK, "ftp://localhost", False),
        # operator-listed origins
        (PROXIED, "https://app.example.com", True),
        (PROXIED, "http://app.example.com", False),
        (PROXIED, "https://evil.app.example.com", False),
    ],
)
def test_origin_allowlist(policy: HostOriginPolicy, origin: str | None, allowed: bool) -> None:
    assert policy.origin_allowed(origin) is allowed


def test_protection_can_be_switched_off_by_the_operator() -> None:
    policy = HostOriginPolicy.from_settings(ServerConfig(dns_rebinding_protection=False))
    assert policy.host_allowed("evil.example.com")
    assert policy.origin_allowed("http://evil.example.com")


def test_a_specific_bound_address_is_allowed_as_host() -> None:
    policy = HostOriginPolicy.from_settings(ServerConfig(host="10.1.2.3"))
    assert policy.host_allowed("10.1.2.3:8765")
    assert not policy.host_allowed("10.1.2.4:8765")


@pytest.mark.parametrize("entry", ["http://x", "x/y", "x:port", ""])
def test_malformed_allowlist_entries_are_configuration_errors(entry: str) -> None:
    with pytest.raises(ValueError, match="allowed_hosts"):
        HostOriginPolicy.from_settings(ServerConfig(allowed_hosts=[entry]))


def test_split_host_keeps_ipv6_brackets() -> None:
    assert split_host("[::1]:80") == ("[::1]", 80)
    assert split_host("Example.COM") == ("example.com", None)
