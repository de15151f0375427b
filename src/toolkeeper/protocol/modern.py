"""The modern era (2026-07-28): no handshake, a ``_meta`` envelope on every request, and the
request ladder of SPEC 3.2 / mcp-wire 4.4 (first failure wins):

====  ====================================================================  ==================
rung  check                                                                 failure
====  ====================================================================  ==================
n     an id-less object is a notification: valid shape; on HTTP the          -32600 / -32020 /
      version header is a served modern version                              -32022, id null
7     a single valid request (``jsonrpc`` "2.0", int/str id, object params)  -32600, id null
      (a response sent to the server: HTTP -32600; stream transports drop it)
9     HTTP: no routing header appears twice                                  -32020
10    ``params._meta`` present, envelope keys present and well typed         -32602
11    HTTP: ``MCP-Protocol-Version`` == envelope version                     -32020
12    HTTP: ``Mcp-Method`` == ``method``                                     -32020
13    HTTP: ``Mcp-Name`` (decoded) == ``name``/``uri`` when non-null         -32020
14    envelope version is a served modern version                            -32022
16    method is in the modern surface                                        -32601 (404)
15    HTTP ``tools/call``: ``Mcp-Param-*`` agree with the arguments          -32020
17+   method params and handler                                              per method
====  ====================================================================  ==================

Rung 15 runs after 16 here because it needs the method's schema hook; no method that has the
hook can fail rung 16, so the observable order is the table's. Notifications carry no envelope
and are acknowledged and dropped (``notifications/cancelled`` cancels on stream transports).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.dispatch import ServerIdentity, error_reply, finisher, run_method
from toolkeeper.protocol.envelope import (
    InboundNotification,
    InboundRequest,
    InboundResponse,
    classify_inbound,
    is_request_id,
    safe_id,
)
from toolkeeper.protocol.faults import (
    header_mismatch,
    invalid_request,
    method_not_found,
    unsupported_version,
)
from toolkeeper.protocol.headers import (
    MCP_PROTOCOL_VERSION,
    NAME_PARAMS,
    check_param_headers,
    check_routing_headers,
    check_unique_routing_headers,
    is_plain_header_value,
)
from toolkeeper.protocol.meta import read_envelope
from toolkeeper.protocol.methods import CacheHint, Call, Method, MethodTable, TransportFacts
from toolkeeper.protocol.outcome import Accepted, Finish, Outcome
from toolkeeper.protocol.raw_headers import RAW_METHOD, RAW_NAME, RAW_PROTOCOL_VERSION
from toolkeeper.protocol.versions import MODERN_VERSIONS, Era, supported_versions

__all__ = ["ModernPipeline", "discover_method"]

_MODERN = Era.MODERN
_MODERN_BY_RAW: dict[bytes, str] = {v.encode(): v for v in MODERN_VERSIONS}


def _readable_id(message: Any) -> Any:
    """The id an envelope error answers: the request's own when it could be read (a request
    object with a method and a valid id, whatever else is malformed; 2026-07-28
    basic/index.mdx, "Error Responses"), else None (a batch, a null or fractional id, a
    response object)."""
    return safe_id(message) if isinstance(message, dict) and "method" in message else None


class ModernPipeline:
    """The modern ladder and dispatch; stateless across requests."""

    def __init__(self, methods: MethodTable, identity: ServerIdentity,
                 resolve_principal: Callable[[TransportFacts], Any]) -> None:
        self._methods = methods
        self._identity = identity
        self._resolve_principal = resolve_principal
        # Per express method: its cache hint and the Finish made for it (built once).
        self._finishers: dict[str, tuple[CacheHint | None, Finish]] = {}

    def handle(self, message: Any, facts: TransportFacts, *, http: bool) -> Outcome:
        if isinstance(message, dict) and "id" not in message:
            return self._notification(message, facts, http=http)
        try:
            inbound = classify_inbound(message)
            if not http and isinstance(inbound, InboundResponse):
                return Accepted()  # a stream peer's response to us: nothing to answer (HTTP: 400)
            if not isinstance(inbound, InboundRequest):
                raise invalid_request("Body must be a single JSON-RPC request or notification "
                                      "object")
        except JsonRpcError as exc:
            return error_reply(_readable_id(message), exc)
        try:
            call, method = self._ladder(inbound, facts, http=http)
        except Exception as exc:
            return error_reply(inbound.id, exc)
        return self._from_rung_15(method, call, http=http)

    def _from_rung_15(self, method: Method, call: Call, *, http: bool) -> Outcome:
        """The rest of the ladder for a call: HTTP ``Mcp-Param-*`` headers, then dispatch."""
        try:
            if http and method.header_schema is not None:
                _check_param_headers(method, call)
        except Exception as exc:
            return error_reply(call.request_id, exc)
        return run_method(method, call, self._identity)

    def express(self, message: dict[str, Any], index: Mapping[bytes, bytes],
                facts: TransportFacts, method: Method) -> Outcome | None:
        """The ladder in one pass for the common HTTP request to ``method`` (whose ``express``
        is set, and which ``message["method"]`` names): a single valid request whose routing
        headers equal the body verbatim (``index`` is the request's
        :func:`~toolkeeper.protocol.raw_headers.asgi_index`). It is answered exactly as
        :meth:`handle` would answer it (``tests/protocol/test_express.py`` compares the two);
        anything else is None, before the principal is resolved, for :meth:`handle` to judge.
        After that the call is never judged twice: a method that declines its express lane
        continues on the ordinary path from rung 15 with the same call."""
        request_id = message.get("id")
        if type(request_id) is not int and type(request_id) is not str:
            return None
        params = message.get("params")
        if (type(params) is not dict or message.get("jsonrpc") != "2.0" or "result" in message
                or "error" in message):
            return None
        name = method.name
        try:  # the routing headers, compared as raw bytes: OWS or any oddity falls back
            version = _MODERN_BY_RAW.get(index.get(RAW_PROTOCOL_VERSION, b""))
            if version is None or index.get(RAW_METHOD) != name.encode():
                return None
            envelope = read_envelope(params)
        except (JsonRpcError, TypeError):
            return None
        if envelope.protocol_version != version:
            return None
        key = NAME_PARAMS.get(name)
        if key is not None:
            value = params.get(key)
            if value is not None:
                raw_name = index.get(RAW_NAME)
                if (type(raw_name) is not bytes or raw_name.decode("latin-1") != value
                        or not is_plain_header_value(value)):
                    return None
        try:
            call = Call(request_id, name, params, _MODERN, version,
                        envelope.client_capabilities, envelope.client_info, envelope.log_level,
                        envelope.progress_token, facts, self._resolve_principal(facts))
        except Exception as exc:
            return error_reply(request_id, exc)
        assert method.express is not None
        finish = self._finishers.get(name)
        if finish is None or finish[0] is not method.cache:
            finish = (method.cache, finisher(method.cache, self._identity))
            self._finishers[name] = finish
        try:
            outcome = method.express(call, finish[1])
        except Exception as exc:
            return error_reply(request_id, exc)
        if outcome is not None:
            return outcome
        return self._from_rung_15(method, call, http=True)

    def _notification(self, message: dict[str, Any], facts: TransportFacts, *, http: bool
                      ) -> Outcome:
        try:
            inbound = classify_inbound(message)
            if not isinstance(inbound, InboundNotification):
                raise invalid_request("Body must be a single JSON-RPC request or notification "
                                      "object")
            if http:
                versions = facts.headers.get_all(MCP_PROTOCOL_VERSION)
                if len(versions) != 1:
                    raise header_mismatch(f"{MCP_PROTOCOL_VERSION} header must appear once")
                if versions[0] not in MODERN_VERSIONS:
                    raise unsupported_version(versions[0])
        except JsonRpcError as exc:
            return error_reply(None, exc)
        if not http and inbound.method == "notifications/cancelled":
            target = inbound.params.get("requestId")
            if is_request_id(target):
                return Accepted(cancel=target)
        return Accepted()

    def _ladder(self, request: InboundRequest, facts: TransportFacts, *, http: bool
                ) -> tuple[Call, Method]:
        if http:
            check_unique_routing_headers(facts.headers)
        envelope = read_envelope(request.params)
        if http:
            check_routing_headers(facts.headers, request.method, request.params,
                                  envelope.protocol_version)
        if envelope.protocol_version not in MODERN_VERSIONS:
            # HTTP serves both eras; a stream connection fixed to this era only this era's.
            raise unsupported_version(envelope.protocol_version,
                                      None if http else list(reversed(MODERN_VERSIONS)))
        method = self._methods.lookup(request.method, Era.MODERN)
        if method is None:
            raise method_not_found(request.method)
        call = Call(
            request_id=request.id, method=request.method, params=request.params,
            era=Era.MODERN, protocol_version=envelope.protocol_version,
            client_capabilities=envelope.client_capabilities, client_info=envelope.client_info,
            log_level=envelope.log_level, progress_token=envelope.progress_token, facts=facts,
            principal=self._resolve_principal(facts))
        return call, method


def _check_param_headers(method: Method, call: Call) -> None:
    """Rung 15: the ``Mcp-Param-*`` headers of an HTTP call agree with its arguments."""
    assert method.header_schema is not None
    schema = method.header_schema(call)
    arguments = call.params.get("arguments")
    if schema is not None and isinstance(arguments, dict | type(None)):
        check_param_headers(call.facts.headers, schema, arguments or {})


def discover_method(capabilities: Mapping[str, Any], instructions: str | None,
                    cache: CacheHint) -> Method:
    """``server/discover``: every version served (both eras), capabilities, instructions."""
    result: dict[str, Any] = {
        "supportedVersions": supported_versions(),
        "capabilities": dict(capabilities),
    }
    if instructions is not None:
        result["instructions"] = instructions

    def discover(call: Call) -> dict[str, Any]:
        return dict(result)

    return Method("server/discover", discover, frozenset({Era.MODERN}), cache)
