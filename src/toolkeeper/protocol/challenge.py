"""The HTTP answer to a request whose credential is refused (the MCP authorization spec;
RFC 6750 3, RFC 9728 5.1).

:class:`~toolkeeper.errors.AuthenticationError` is not a JSON-RPC error: it refuses the HTTP
request before any era's rules apply, so it is answered here, once, for both eras and every
method: 401, the resolver's ``WWW-Authenticate`` challenge, and a fixed JSON body (the shape
the official SDKs' bearer middleware sends). The reason is logged, never sent, and nothing
about the estate is in the answer.
"""

from __future__ import annotations

import logging
from typing import Final

from toolkeeper.errors import AuthenticationError
from toolkeeper.protocol.envelope import encode_message
from toolkeeper.protocol.outcome import Reply

__all__ = ["UNAUTHORIZED_BODY", "WWW_AUTHENTICATE", "unauthorized_reply"]

_log = logging.getLogger("toolkeeper.auth.refusals")
"""Not ``toolkeeper.auth``: in a text log line ``toolkeeper.auth: <word>`` reads as a value
under a key named ``auth``, and redaction masks that first word."""

WWW_AUTHENTICATE: Final = "www-authenticate"

UNAUTHORIZED_BODY: Final = {"error": "invalid_token", "error_description": "Authentication required"}
"""The body of every 401, whatever the reason (which is the server's to log, not the
caller's to learn)."""

_ENCODED: Final = encode_message(UNAUTHORIZED_BODY)


def unauthorized_reply(exc: AuthenticationError) -> Reply:
    """401 with the challenge the resolver put on ``exc`` and the fixed body."""
    _log.info("credential refused (%s)", exc.reason)  # no "credential: value" to redact
    return Reply(dict(UNAUTHORIZED_BODY), 401, ((WWW_AUTHENTICATE, exc.challenge),), _ENCODED)
