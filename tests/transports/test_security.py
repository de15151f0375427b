"""Host and Origin allow lists (DNS-rebinding protection)."""

from __future__ import annotations

import pytest

from toolkeeper.transports import OriginPolicy


@pytest.mark.parametrize(("host", "allowed"), [
    ("127.0.0.1", True), ("127.0.0.1:8000", True), ("LOCALHOST:1", True), ("[::1]:80", True),
    ("localhost:", False), ("localhost:abc", False), ("127.0.0.1.nip.io", False),
    ("evil.com", False), (None, False), ("", False),
])
def test_the_default_host_list_admits_loopback_names_with_any_port(host: str | None,
                                                                   allowed: bool) -> None:
    assert OriginPolicy().host_allowed(host) is allowed


@pytest.mark.parametrize(("origin", "allowed"), [
    (None, True), ("http://localhost:5173", True), ("https://127.0.0.1", True),
    ("http://[::1]:3000", True), ("http://evil.com", False), ("null", False),
    ("file://", False), ("http://localhost.evil.com", False),
])
def test_the_default_origin_list_admits_absent_or_loopback_origins(origin: str | None,
                                                                   allowed: bool) -> None:
    assert OriginPolicy().origin_allowed(origin) is allowed


def test_exact_patterns_and_disabled_checks() -> None:
    policy = OriginPolicy(allowed_hosts=("api.example.com",), allowed_origins=None)
    assert policy.host_allowed("api.example.com")
    assert not policy.host_allowed("api.example.com:443")
    assert policy.origin_allowed("http://anything")
    assert OriginPolicy(allowed_hosts=None).host_allowed(None)
