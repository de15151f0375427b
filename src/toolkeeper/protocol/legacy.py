"""The legacy (handshake) era: SPEC 3.1's five gates, ``initialize`` negotiation, ``ping`` and
``logging/setLevel`` (mcp-wire 10).

Gate order is the design (seed 000 section 1):

1. envelope validation; an error is answered with ``message.get("id")`` when that is a valid
   id, else null. A request carrying the modern ``_meta`` envelope is refused here (-32600):
   a legacy session never serves the other era's rules;
2. ``notifications/*`` are handled and produce no response (gate 2 precedes gate 3, or
   ``notifications/initialized`` would be swallowed and the session would never go live);
3. any other message without an id produces no response;
4. until the session is live (``initialize`` answered and ``notifications/initialized``
   received), any method but ``initialize`` is -32600;
5. dispatch: session built-ins, then the shared method table; unknown methods are -32601.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.dispatch import (
    LegacyFinish,
    ServerIdentity,
    answer_error_reply,
    error_reply,
    run_method,
)
from toolkeeper.protocol.envelope import (
    InboundNotification,
    InboundRequest,
    InboundResponse,
    classify_inbound,
    encode_message,
    is_request_id,
    result_message,
    safe_id,
)
from toolkeeper.protocol.faults import invalid_params, invalid_request, method_not_found
from toolkeeper.protocol.meta import (
    LOG_LEVELS,
    PROTOCOL_VERSION_KEY,
    claims_modern_envelope,
    read_progress_token,
)
from toolkeeper.protocol.methods import Call, Method, MethodTable, TransportFacts
from toolkeeper.protocol.outcome import Accepted, Outcome, Pending, Reply, ResumablePending
from toolkeeper.protocol.sessions import LegacySession, Phase
from toolkeeper.protocol.versions import (
    HANDSHAKE_VERSIONS,
    RESUMABLE_VERSIONS,
    Era,
    negotiate_handshake,
)

__all__ = ["LEGACY_BY_RAW", "LegacyPipeline", "check_legacy_envelope", "plain_request"]

Inbound = InboundRequest | InboundNotification | InboundResponse
_LEGACY = Era.LEGACY
LEGACY_BY_RAW: dict[bytes, str] = {v.encode(): v for v in HANDSHAKE_VERSIONS}
"""A raw ``MCP-Protocol-Version`` value that names a handshake version exactly."""


def check_legacy_envelope(message: Any) -> Inbound:
    """Gate 1: a single valid JSON-RPC message that does not claim the modern envelope
    (``initialize`` excepted: a dual-era client may stamp it, and it opens a legacy session)."""
    inbound = classify_inbound(message)
    if (isinstance(inbound, InboundRequest) and inbound.method != "initialize"
            and claims_modern_envelope(inbound.params)):
        raise invalid_request(
            "this session serves the handshake protocol era; requests carrying the "
            "2026-07-28 envelope are not accepted on it")
    return inbound


def plain_request(message: dict[str, Any]) -> InboundRequest | None:
    """The request of a message that passes gate 1 as a request in the plainest form (an
    integer or string id, ``"jsonrpc": "2.0"``, a params object, a ``_meta`` that is absent or
    an object without the modern envelope's key, no ``result`` or ``error``), else None for
    :func:`check_legacy_envelope` to judge; ``message["method"]`` is a non-empty string the
    caller has checked. What it returns is what that gate would have returned. (The first
    checks are those of ``ModernPipeline.express``, written out in each: a shared function
    returning the request cost the modern lane 3,094 instructions a call.)"""
    request_id = message.get("id")
    if type(request_id) is not int and type(request_id) is not str:
        return None
    params = message.get("params")
    if (type(params) is not dict or message.get("jsonrpc") != "2.0" or "result" in message
            or "error" in message):
        return None
    meta = params.get("_meta")
    if meta is not None and (type(meta) is not dict or PROTOCOL_VERSION_KEY in meta):
        return None
    return InboundRequest(request_id, message["method"], params)


class LegacyPipeline:
    """Gates 1-5 over one :class:`LegacySession`."""

    def __init__(self, methods: MethodTable, identity: ServerIdentity,
                 capabilities: Mapping[str, Any], instructions: str | None,
                 resolve_principal: Callable[[TransportFacts], Any]) -> None:
        self._methods = methods
        self._identity = identity
        self._capabilities = dict(capabilities)
        self._instructions = instructions
        self._resolve_principal = resolve_principal
        self._builtins: dict[str, Callable[[LegacySession, InboundRequest], dict[str, Any]]] = {
            "initialize": self._initialize,
            "ping": _ping,
            "logging/setLevel": _set_level,
        }

    def handle(self, message: Any, session: LegacySession, facts: TransportFacts) -> Outcome:
        """SPEC 3.1 ``handle``: all five gates (stream transports)."""
        try:
            inbound = check_legacy_envelope(message)
        except JsonRpcError as exc:
            return error_reply(safe_id(message), exc)
        return self.after_envelope(inbound, session, facts)

    def after_envelope(self, inbound: Inbound, session: LegacySession, facts: TransportFacts,
                       headers: tuple[tuple[str, str], ...] = ()) -> Outcome:
        """Gates 2-5 for a message that passed gate 1 (HTTP resolves the session in between)."""
        if isinstance(inbound, InboundResponse):  # to a request a handler sent its client
            return Accepted(headers=headers, response=inbound)
        if inbound.method.startswith("notifications/"):  # gate 2
            return self._notify(inbound.method, inbound.params, session, headers)
        if isinstance(inbound, InboundNotification):  # gate 3
            return Accepted(headers=headers)
        if session.phase is not Phase.READY and inbound.method != "initialize":  # gate 4
            return answer_error_reply(inbound.id, invalid_request(
                f"session is not initialized; {inbound.method!r} must follow initialize "
                "and notifications/initialized"), _LEGACY, headers)
        return self._dispatch(inbound, session, facts, headers)  # gate 5

    def _notify(self, method: str, params: Mapping[str, Any], session: LegacySession,
                headers: tuple[tuple[str, str], ...]) -> Accepted:
        if method == "notifications/initialized" and session.phase is Phase.INITIALIZING:
            session.phase = Phase.READY
        elif method == "notifications/cancelled" and is_request_id(params.get("requestId")):
            return Accepted(cancel=params["requestId"], headers=headers)
        return Accepted(headers=headers)

    def _dispatch(self, request: InboundRequest, session: LegacySession, facts: TransportFacts,
                  headers: tuple[tuple[str, str], ...]) -> Outcome:
        builtin = self._builtins.get(request.method)
        if builtin is not None:
            try:
                return Reply(result_message(request.id, builtin(session, request)), 200, headers)
            except Exception as exc:
                return answer_error_reply(request.id, exc, _LEGACY, headers)
        method = self._methods.lookup(request.method, Era.LEGACY)
        try:
            if method is None:
                raise method_not_found(request.method)
            call = self._call(request, session, facts)
        except Exception as exc:
            return answer_error_reply(request.id, exc, _LEGACY, headers)
        return _in_session(run_method(method, call, self._identity, headers), session)

    def express(self, request: InboundRequest, session: LegacySession, facts: TransportFacts,
                method: Method, headers: tuple[tuple[str, str], ...]) -> Outcome:
        """Gates 2-5 for a request of a session (from :func:`plain_request`) to ``method``,
        which has an express lane: the lane answers a call of a live session, its result
        finished by :class:`~toolkeeper.protocol.dispatch.LegacyFinish`; a call it declines
        goes on to the handler with the same :class:`Call`; anything else takes the ordinary
        gates. The answer is the ordinary one (``tests/protocol/test_legacy_express.py``)."""
        express = method.express
        if (express is None or session.phase is not Phase.READY or _LEGACY not in method.eras
                or request.method in self._builtins):
            return self.after_envelope(request, session, facts, headers)
        try:
            call = self._call(request, session, facts)
        except Exception as exc:
            return answer_error_reply(request.id, exc, _LEGACY, headers)
        try:
            outcome = express(call, LegacyFinish(headers))
        except Exception as exc:
            return answer_error_reply(request.id, exc, _LEGACY, headers)
        if outcome is None:
            return _in_session(run_method(method, call, self._identity, headers), session)
        return _in_session(outcome, session, headers)

    def _call(self, request: InboundRequest, session: LegacySession, facts: TransportFacts
              ) -> Call:
        return Call(
            request_id=request.id, method=request.method, params=request.params,
            era=_LEGACY, protocol_version=session.protocol_version,
            client_capabilities=session.client_capabilities,
            client_info=session.client_info, log_level=session.log_level,
            progress_token=read_progress_token(request.params), facts=facts,
            principal=self._resolve_principal(facts))

    def _initialize(self, session: LegacySession, request: InboundRequest) -> dict[str, Any]:
        if session.phase is not Phase.NEW:
            raise invalid_request("session is already initialized")
        params = request.params
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise invalid_params("initialize: protocolVersion must be a string",
                                 {"path": "$.params.protocolVersion"})
        capabilities = params.get("capabilities")
        if not isinstance(capabilities, dict):
            raise invalid_params("initialize: capabilities must be an object",
                                 {"path": "$.params.capabilities"})
        info = params.get("clientInfo")
        if not (isinstance(info, dict) and isinstance(info.get("name"), str)
                and isinstance(info.get("version"), str)):
            raise invalid_params("initialize: clientInfo must be an object with string name "
                                 "and version", {"path": "$.params.clientInfo"})
        session.protocol_version = negotiate_handshake(requested)
        session.client_capabilities = capabilities
        session.client_info = info
        session.weight = len(encode_message(capabilities)) + len(encode_message(info))
        session.phase = Phase.INITIALIZING
        out: dict[str, Any] = {
            "protocolVersion": session.protocol_version,
            "capabilities": self._capabilities,
            "serverInfo": self._identity.to_wire(),
        }
        if self._instructions is not None:
            out["instructions"] = self._instructions
        return out


def _in_session(outcome: Outcome, session: LegacySession,
                headers: tuple[tuple[str, str], ...] | None = None) -> Outcome:
    """A session's Pending (given the session's ``headers`` if it lacks them), resumable
    when the session's version allows it."""
    if type(outcome) is not Pending:
        return outcome
    if session.id is not None and session.protocol_version in RESUMABLE_VERSIONS:
        return ResumablePending(outcome.request_id, outcome.run,
                                outcome.headers if headers is None else headers, outcome.stream)
    if headers is None:
        return outcome
    return Pending(outcome.request_id, outcome.run, headers, outcome.stream)


def _ping(session: LegacySession, request: InboundRequest) -> dict[str, Any]:
    return {}


def _set_level(session: LegacySession, request: InboundRequest) -> dict[str, Any]:
    level = request.params.get("level")
    if not isinstance(level, str) or level not in LOG_LEVELS:
        raise invalid_params("logging/setLevel: level must be one of " + ", ".join(LOG_LEVELS),
                             {"path": "$.params.level"})
    session.log_level = level
    return {}
