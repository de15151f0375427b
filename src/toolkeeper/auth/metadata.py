"""The protected-resource metadata (RFC 9728) and the challenge that points to it.

The gateway is an OAuth 2.1 resource server (the MCP authorization spec): its metadata
document names the ``resource`` (this gateway's URL, also the RFC 8707 audience of its
tokens), the ``authorization_servers`` that issue them, the ``scopes_supported`` and
``bearer_methods_supported: ["header"]``. It is served, without authentication, at
``/.well-known/oauth-protected-resource`` and at the path-suffixed form RFC 9728 3.1 derives
from the resource URL (``https://gw.example/mcp`` ->
``https://gw.example/.well-known/oauth-protected-resource/mcp``), which is also the
``resource_metadata`` of every 401's ``WWW-Authenticate`` challenge (RFC 9728 5.1).
"""

from __future__ import annotations

import json
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from toolkeeper.auth.settings import AuthSettingsLike

__all__ = [
    "WELL_KNOWN",
    "challenges",
    "default_resource",
    "metadata_documents",
    "metadata_url",
    "resource_metadata",
]

WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"


def default_resource(host: str, port: int, path: str) -> str:
    """The resource URL when ``auth.resource`` is empty: the listen address and path."""
    authority = f"[{host}]" if ":" in host else host
    return f"http://{authority}:{port}{path}"


def metadata_url(resource: str) -> str:
    """Where the metadata of ``resource`` lives (RFC 9728 3.1: the well-known segment is
    inserted between the authority and the resource's path)."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN + path, "", ""))


def resource_metadata(auth: AuthSettingsLike, resource: str) -> dict[str, Any]:
    """The RFC 9728 document (section 2)."""
    document: dict[str, Any] = {
        "resource": resource,
        "bearer_methods_supported": ["header"],
    }
    if auth.authorization_servers:
        document["authorization_servers"] = list(auth.authorization_servers)
    if auth.scopes_supported:
        document["scopes_supported"] = list(auth.scopes_supported)
    return document


def metadata_documents(auth: AuthSettingsLike, resource: str, endpoint_path: str = ""
                       ) -> dict[str, bytes]:
    """Request path -> the encoded document, for
    :attr:`~toolkeeper.transports.HttpConfig.documents`: the bare well-known path, the one
    suffixed with the resource URL's path and the one suffixed with the endpoint's own path
    (they differ behind a proxy that rewrites paths)."""
    body = json.dumps(resource_metadata(auth, resource), sort_keys=True).encode()
    paths = {WELL_KNOWN, urlsplit(metadata_url(resource)).path}
    if endpoint_path and endpoint_path != "/":
        paths.add(WELL_KNOWN + endpoint_path.rstrip("/"))
    return dict.fromkeys(sorted(paths), body)


def challenges(resource: str) -> tuple[str, str]:
    """The ``WWW-Authenticate`` values of a 401: (no credential sent, one sent and refused).
    RFC 6750 3.1: a request without credentials gets no error code."""
    pointer = f'resource_metadata="{metadata_url(resource)}"'
    return f"Bearer {pointer}", f'Bearer error="invalid_token", {pointer}'
