"""The RFC 9728 protected-resource metadata: served without a credential at the well-known
path and its path-suffixed form, named by every 401's challenge."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from jwt_kit import ISSUER, RESOURCE, Auth, Issuer, modern, served

from toolkeeper.auth import challenges, default_resource, metadata_documents, metadata_url


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    secret = tmp_path_factory.mktemp("s") / "secret"
    secret.write_text("an-hs256-shared-secret-of-32-bytes-or-more!")
    auth = Auth(jwt_issuers=(Issuer(secret_file=str(secret), algorithms=("HS256",)),))
    with served(auth) as url:
        yield url


def test_the_metadata_document_is_served_at_both_well_known_paths_without_a_token(
        gateway_url: str) -> None:
    origin = gateway_url.removesuffix("/mcp")
    with httpx.Client(timeout=10) as http:
        for path in ("/.well-known/oauth-protected-resource",
                     "/.well-known/oauth-protected-resource/mcp"):
            response = http.get(origin + path)
            assert (response.status_code, response.headers["content-type"]) == (
                200, "application/json")
            assert response.json() == {
                "resource": RESOURCE, "authorization_servers": [ISSUER],
                "scopes_supported": ["vault.admin"], "bearer_methods_supported": ["header"]}
        assert http.post(origin + "/.well-known/oauth-protected-resource").status_code == 405
        assert http.get(origin + "/.well-known/other").status_code == 404


def test_the_challenge_points_at_the_path_suffixed_metadata_url(gateway_url: str) -> None:
    with httpx.Client(timeout=10) as http:
        response = modern(http, gateway_url, "tools/list", None)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        'Bearer resource_metadata="https://gw.test/.well-known/oauth-protected-resource/mcp"')


@pytest.mark.parametrize(("resource", "url"), [
    ("https://gw.example/mcp", "https://gw.example/.well-known/oauth-protected-resource/mcp"),
    ("https://gw.example/", "https://gw.example/.well-known/oauth-protected-resource"),
    ("https://gw.example", "https://gw.example/.well-known/oauth-protected-resource"),
    ("http://[::1]:8000/a/b", "http://[::1]:8000/.well-known/oauth-protected-resource/a/b"),
])
def test_the_metadata_url_inserts_the_well_known_segment_before_the_path(
        resource: str, url: str) -> None:
    assert metadata_url(resource) == url
    assert challenges(resource)[1] == (
        f'Bearer error="invalid_token", resource_metadata="{url}"')


def test_documents_cover_the_resource_path_and_the_endpoint_path_and_omit_empty_lists() -> None:
    auth = Auth(authorization_servers=(), scopes_supported=())
    documents = metadata_documents(auth, "https://gw.example/public/mcp", "/mcp")
    assert sorted(documents) == [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource/public/mcp"]
    assert set(documents.values()) == {
        b'{"bearer_methods_supported": ["header"], "resource": "https://gw.example/public/mcp"}'}
    assert urlsplit(default_resource("::1", 8000, "/mcp")).netloc == "[::1]:8000"
