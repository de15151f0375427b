"""The sans-IO protocol core: JSON-RPC envelopes, both MCP eras, header integrity, error codes.

Nothing here performs I/O or imports an event loop, a socket or an HTTP framework (a test
enforces it): transports feed the :class:`ServerKernel` bytes and facts and act on the
:class:`Outcome` it returns. Envelope and header helpers are symmetric so a client can build
and check the same messages.
"""

from toolkeeper.errors import AskError  # what a Backchannel's ask raises (transports use it)
from toolkeeper.protocol import codes
from toolkeeper.protocol.capabilities import missing_capabilities
from toolkeeper.protocol.dispatch import (
    ServerIdentity,
    error_reply,
    finish_result,
    finisher,
    plain_express,
)
from toolkeeper.protocol.envelope import (
    MAX_DEPTH,
    RequestId,
    check_response,
    classify_inbound,
    decode_message,
    encode_message,
    error_message,
    notification_message,
    request_message,
    result_message,
)
from toolkeeper.protocol.faults import wire_error
from toolkeeper.protocol.headers import (
    HeaderView,
    decode_header_value,
    encode_header_value,
    param_headers,
)
from toolkeeper.protocol.kernel import ServerKernel, StreamConnection, select_http_era
from toolkeeper.protocol.meta import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    log_level_allows,
)
from toolkeeper.protocol.methods import (
    Backchannel,
    CacheHint,
    Call,
    Deferred,
    Emit,
    Method,
    MethodResult,
    MethodTable,
    TransportFacts,
)
from toolkeeper.protocol.outcome import Accepted, Finish, Outcome, Pending, Reply
from toolkeeper.protocol.sessions import LegacySession, Phase, SessionTable
from toolkeeper.protocol.versions import (
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    MODERN_VERSIONS,
    Era,
    supported_versions,
)

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "LATEST_MODERN_VERSION",
    "LOG_LEVELS",
    "LOG_LEVEL_KEY",
    "MAX_DEPTH",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "Accepted",
    "AskError",
    "Backchannel",
    "CacheHint",
    "Call",
    "Deferred",
    "Emit",
    "Era",
    "Finish",
    "HeaderView",
    "LegacySession",
    "Method",
    "MethodResult",
    "MethodTable",
    "Outcome",
    "Pending",
    "Phase",
    "Reply",
    "RequestId",
    "ServerIdentity",
    "ServerKernel",
    "SessionTable",
    "StreamConnection",
    "TransportFacts",
    "check_response",
    "classify_inbound",
    "codes",
    "decode_header_value",
    "decode_message",
    "encode_header_value",
    "encode_message",
    "error_message",
    "error_reply",
    "finish_result",
    "finisher",
    "log_level_allows",
    "missing_capabilities",
    "notification_message",
    "param_headers",
    "plain_express",
    "request_message",
    "result_message",
    "select_http_era",
    "supported_versions",
    "wire_error",
]
