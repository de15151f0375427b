"""Stateless legacy mode (``legacy_sessions = "stateless"``): legacy HTTP without sessions.

As the official SDK's stateless mode does (``stateless_http=True``, mcp-wire 10), every legacy
request is served on its own, by a session born for it and forgotten after it: ready at once
(no handshake is needed first), at the version its ``MCP-Protocol-Version`` header names, or
:data:`DEFAULT_STATELESS_VERSION` without one, with no client capabilities (none were
declared to this request). ``initialize`` is answered as usual but mints no session id, and an
``Mcp-Session-Id`` a client sends anyway is not looked up. Nothing is kept between requests,
so any replica can serve any request: no sticky routing. What it gives up is what lives in a
session: the standalone GET stream, ``notifications/cancelled`` and ``logging/setLevel``
between requests, and a tool's view of the client's declared capabilities.
"""

from __future__ import annotations

from typing import Final

from toolkeeper.protocol.envelope import InboundRequest
from toolkeeper.protocol.headers import MCP_PROTOCOL_VERSION
from toolkeeper.protocol.methods import TransportFacts
from toolkeeper.protocol.sessions import LegacySession, Phase
from toolkeeper.protocol.versions import HANDSHAKE_VERSIONS

__all__ = ["DEFAULT_STATELESS_VERSION", "LEGACY_SESSION_MODES", "stateless_session"]

DEFAULT_STATELESS_VERSION: Final = "2025-03-26"
"""The version a stateless request without ``MCP-Protocol-Version`` is served at (the SDK's
``DEFAULT_NEGOTIATED_VERSION``, the 2025 transport spec's rule for a missing header)."""

LEGACY_SESSION_MODES: Final = ("stateful", "stateless")
"""The values of the kernel's ``legacy_sessions`` option (``[server] legacy_sessions``)."""


def stateless_session(inbound: object, facts: TransportFacts) -> LegacySession:
    """The one-request session for a legacy message in stateless mode: a new one for
    ``initialize`` (which negotiates as always), else one already ready at the header's
    version."""
    if isinstance(inbound, InboundRequest) and inbound.method == "initialize":
        return LegacySession()
    version = facts.headers.get(MCP_PROTOCOL_VERSION)
    return LegacySession(phase=Phase.READY, protocol_version=(
        version if version in HANDSHAKE_VERSIONS else DEFAULT_STATELESS_VERSION))
