"""The modern per-request ``params._meta`` envelope (mcp-wire 1), and ``_meta`` keys of both eras.

:func:`read_envelope` validates presence *and types* of the envelope keys in one step. SPEC 3.2
orders "parse and validate the JSON-RPC envelope and ``_meta`` types" before any header
comparison, so a non-string ``protocolVersion`` is -32602 here on every transport (the SDK
compares headers first and answers -32020 for it on HTTP; SPEC is authoritative).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import msgspec

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.faults import invalid_params

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "LOG_LEVELS",
    "LOG_LEVEL_KEY",
    "PROGRESS_TOKEN_KEY",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "Envelope",
    "claims_modern_envelope",
    "log_level_allows",
    "read_envelope",
    "read_progress_token",
]

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
"""On every notification of a ``subscriptions/listen`` stream and on its final result: the
JSON-RPC id of the listen request (mcp-wire 1, 7.7)."""
PROGRESS_TOKEN_KEY: Final = "progressToken"
_ABSENT: Final = object()

LOG_LEVELS: Final[Mapping[str, int]] = MappingProxyType({
    name: rank for rank, name in enumerate(
        ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"))
})
"""RFC 5424 severities, least severe first, with their rank."""


def log_level_allows(threshold: str | None, level: str) -> bool:
    """Whether a message at ``level`` may be sent to a caller whose threshold is ``threshold``
    (None: the caller did not ask for logs, so nothing is sent)."""
    return threshold is not None and LOG_LEVELS[level] >= LOG_LEVELS[threshold]


class Envelope(msgspec.Struct, frozen=True):
    """The validated modern envelope of one request (an immutable msgspec Struct: built for
    every request, about ten times faster than a frozen dataclass)."""

    protocol_version: str
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    log_level: str | None
    progress_token: str | int | None


def claims_modern_envelope(params: object) -> bool:
    """Whether a params object carries the modern protocol-version key in its ``_meta``."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def _meta_of(params: Mapping[str, Any]) -> Mapping[str, Any] | None:
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else None


def read_progress_token(params: Mapping[str, Any]) -> str | int | None:
    """``params._meta.progressToken`` (a string or an integer, never a boolean) or None."""
    meta = _meta_of(params)
    return None if meta is None else _progress_token(meta)


def _progress_token(meta: Mapping[str, Any]) -> str | int | None:
    if PROGRESS_TOKEN_KEY not in meta:
        return None
    token = meta[PROGRESS_TOKEN_KEY]
    if type(token) is int or type(token) is str:
        return token
    raise _bad_progress_token()


def _bad_progress_token() -> JsonRpcError:
    return invalid_params("params._meta.progressToken must be a string or an integer",
                          {"path": "$.params._meta.progressToken"})


def _bad(key: str, what: str) -> JsonRpcError:
    return invalid_params(f"params._meta[{key!r}] {what}", {"path": f"$.params._meta[{key!r}]"})


def read_envelope(params: Mapping[str, Any]) -> Envelope:
    """Validate the modern envelope: presence and types of every envelope key (-32602)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise invalid_params(
            f"params._meta must be an object carrying {PROTOCOL_VERSION_KEY!r} and "
            f"{CLIENT_CAPABILITIES_KEY!r}", {"path": "$.params._meta"})
    version = meta.get(PROTOCOL_VERSION_KEY, _ABSENT)
    capabilities = meta.get(CLIENT_CAPABILITIES_KEY, _ABSENT)
    if version is _ABSENT or capabilities is _ABSENT:
        missing = [k for k in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if k not in meta]
        raise invalid_params("params._meta is missing the required envelope key(s): "
                             + ", ".join(missing), {"path": f"$.params._meta[{missing[0]!r}]"})
    if not isinstance(version, str):
        raise _bad(PROTOCOL_VERSION_KEY, "must be a string")
    if not isinstance(capabilities, dict):
        raise _bad(CLIENT_CAPABILITIES_KEY, "must be an object")
    if capabilities and not _are_capabilities(capabilities):
        raise _bad(CLIENT_CAPABILITIES_KEY, "members must be objects as ClientCapabilities "
                   "types them (" + ", ".join(_CAPABILITY_MEMBERS) + ")")
    info = meta.get(CLIENT_INFO_KEY)
    if info is not None and not _is_implementation(info):
        raise _bad(CLIENT_INFO_KEY, "must be an object with string name and version (and "
                   "string title, description and websiteUrl, and a list of icons, if given)")
    level = meta.get(LOG_LEVEL_KEY)
    if level is not None and (not isinstance(level, str) or level not in LOG_LEVELS):
        raise _bad(LOG_LEVEL_KEY, "must be one of " + ", ".join(LOG_LEVELS))
    token = meta.get(PROGRESS_TOKEN_KEY, _ABSENT)
    if token is _ABSENT:
        token = None
    elif type(token) is not int and type(token) is not str:
        raise _bad_progress_token()
    return Envelope(version, capabilities, info, level, token)


_CAPABILITY_MEMBERS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "elicitation": ("form", "url"), "sampling": ("context", "tools"), "roots": (),
    "experimental": (), "extensions": (),
})
"""The 2026 ``ClientCapabilities`` members (mcp-wire 1), each an object, with their own object
members; ``extensions`` maps extension ids to objects. Other keys are left alone."""


def _are_capabilities(capabilities: dict[str, Any]) -> bool:
    for key, members in _CAPABILITY_MEMBERS.items():
        value = capabilities.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            return False
        inner = value.values() if key == "extensions" else (value.get(m) for m in members)
        if any(v is not None and not isinstance(v, dict) for v in inner):
            return False
    return True


_IMPLEMENTATION_TEXT: Final = ("title", "description", "websiteUrl")


def _is_implementation(value: object) -> bool:
    """An ``Implementation`` (mcp-wire 1): string name and version; the optional fields typed."""
    return (isinstance(value, dict) and isinstance(value.get("name"), str)
            and isinstance(value.get("version"), str)
            and all(_is_none_or(value.get(key), str) for key in _IMPLEMENTATION_TEXT)
            and _is_none_or(value.get("icons"), list))


def _is_none_or(value: object, kind: type) -> bool:
    return value is None or isinstance(value, kind)
