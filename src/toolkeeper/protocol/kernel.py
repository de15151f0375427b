"""The server kernel: one endpoint, both eras, no I/O.

Transports hand it bytes (or decoded messages) plus :class:`TransportFacts` and get back an
:class:`~toolkeeper.protocol.outcome.Outcome`: a Reply to send, Accepted (nothing to send), or
Pending (await it on the transport's loop). Era selection:

* HTTP, per message: modern when an ``MCP-Protocol-Version`` header names anything but a
  handshake version, or when the body (other than ``initialize``) carries the modern ``_meta``
  envelope; a modern body without a matching header therefore fails the header rung (-32020)
  instead of being served silently as a legacy call. Everything else is legacy, with
  ``Mcp-Session-Id`` sessions, or without any (``legacy_sessions="stateless"``, see
  :mod:`~toolkeeper.protocol.stateless`).
* Stream transports, per connection: the first valid *request* decides once (mcp-wire 2,
  "Dual-era on stream transports"); ``initialize`` on a modern connection is -32022, an
  enveloped request on a legacy connection -32600.

HTTP authenticates first: every request (POST of either era, GET, DELETE) is shown to the
principal resolver before anything else the kernel judges, and an
:class:`~toolkeeper.errors.AuthenticationError` is answered 401 by
:func:`~toolkeeper.protocol.challenge.unauthorized_reply`, the one place that does. The
principal found is kept for the rest of that request (the pipelines ask again with the same
facts and get it back without resolving twice). Any other exception from the resolver is
left to the request's era to answer, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from toolkeeper.errors import AuthenticationError, JsonRpcError
from toolkeeper.protocol.challenge import unauthorized_reply
from toolkeeper.protocol.dispatch import ServerIdentity, answer_error_reply, error_reply
from toolkeeper.protocol.envelope import (
    InboundRequest,
    RequestId,
    classify_inbound,
    decode_message,
    safe_id,
)
from toolkeeper.protocol.faults import invalid_request, unsupported_version
from toolkeeper.protocol.headers import (
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    HeaderView,
)
from toolkeeper.protocol.legacy import (
    LEGACY_BY_RAW,
    LegacyPipeline,
    check_legacy_envelope,
    plain_request,
)
from toolkeeper.protocol.meta import claims_modern_envelope
from toolkeeper.protocol.methods import CacheHint, Method, MethodTable, TransportFacts
from toolkeeper.protocol.modern import ModernPipeline, discover_method
from toolkeeper.protocol.outcome import Outcome, Reply
from toolkeeper.protocol.raw_headers import (
    RAW_PROTOCOL_VERSION,
    RAW_SESSION_ID,
    asgi_index,
    header_text,
)
from toolkeeper.protocol.sessions import LegacySession, Phase, SessionOwner, SessionTable
from toolkeeper.protocol.stateless import LEGACY_SESSION_MODES, stateless_session
from toolkeeper.protocol.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS, Era

__all__ = ["ServerKernel", "StreamConnection", "select_http_era"]


_DISCOVER_CACHE = CacheHint(0, "public")


class _Refused:
    """What :meth:`ServerKernel.authenticate` keeps for a request whose principal the resolver
    could not give (an exception other than a refused credential)."""

    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


def _anonymous(facts: TransportFacts) -> Any:
    return None


def select_http_era(message: Any, headers: Any) -> Era:
    """The era whose rules an HTTP message is judged by (see the module docstring)."""
    for version in headers.get_all(MCP_PROTOCOL_VERSION):
        if version not in HANDSHAKE_VERSIONS:
            return Era.MODERN
    if (isinstance(message, dict) and message.get("method") != "initialize"
            and claims_modern_envelope(message.get("params"))):
        return Era.MODERN
    return Era.LEGACY


@dataclass(slots=True)
class StreamConnection:
    """One stdio (or in-memory) connection: its era once decided, and its legacy session."""

    facts: TransportFacts
    era: Era | None = None
    session: LegacySession = field(default_factory=LegacySession)


def _stream_era(message: Any) -> Era | None:
    try:
        inbound = classify_inbound(message)
    except JsonRpcError:
        return None
    if not isinstance(inbound, InboundRequest):
        return None
    if inbound.method != "initialize" and claims_modern_envelope(inbound.params):
        return Era.MODERN
    return Era.LEGACY


class ServerKernel:
    """Routes each message to its era's pipeline over a shared method table."""

    def __init__(self, methods: MethodTable, *, identity: ServerIdentity,
                 capabilities: Mapping[str, Any], instructions: str | None = None,
                 discover_cache: CacheHint = _DISCOVER_CACHE,
                 resolve_principal: Callable[[TransportFacts], Any] = _anonymous,
                 sessions: SessionTable | None = None,
                 legacy_sessions: str = "stateful",
                 admit_initialize: Callable[[Any], None] | None = None) -> None:
        if legacy_sessions not in LEGACY_SESSION_MODES:
            raise ValueError(f"legacy_sessions must be one of {', '.join(LEGACY_SESSION_MODES)}"
                             f", not {legacy_sessions!r}")
        # Legacy HTTP without sessions: see toolkeeper.protocol.stateless
        self._stateless = legacy_sessions == "stateless"
        if methods.lookup("server/discover", Era.MODERN) is None:
            methods.add(discover_method(capabilities, instructions, discover_cache))
        self.methods = methods
        self.identity = identity
        self.sessions = sessions if sessions is not None else SessionTable()
        self._resolve = resolve_principal
        # Called with the principal of each legacy HTTP initialize before a session is made:
        # raises a JsonRpcError (the per-principal rate limit's) to refuse it.
        self._admit_initialize = admit_initialize
        # (facts, principal) of the HTTP request authenticated last: see _resolve_principal
        self._authenticated: tuple[TransportFacts | None, Any] = (None, None)
        self._modern = ModernPipeline(methods, identity, self._resolve_principal)
        self._legacy = LegacyPipeline(methods, identity, capabilities, instructions,
                                      self._resolve_principal)

    def _resolve_principal(self, facts: TransportFacts) -> Any:
        """The principal of ``facts``: the one :meth:`authenticate` found for these very facts
        (an identity check: any other request, or another thread's, resolves afresh)."""
        authenticated = self._authenticated
        if authenticated[0] is facts:
            found = authenticated[1]
            if type(found) is _Refused:
                raise found.exc
            return found
        return self._resolve(facts)

    def authenticate(self, facts: TransportFacts) -> Reply | None:
        """HTTP, before anything else: the 401 for a request whose credential the resolver
        refuses (:class:`~toolkeeper.errors.AuthenticationError`), else None, the principal
        kept for the rest of the request. Any other exception from the resolver (a JSON-RPC
        refusal, a store it could not read) is kept too: every later resolution of these facts
        raises it, and :meth:`handle_http_message` answers it in the request's era before
        anything else, so a request without a principal is never served, not even a method
        that needs none (``initialize``, ``ping``, a notification)."""
        try:
            principal = self._resolve(facts)
        except AuthenticationError as exc:
            return unauthorized_reply(exc)
        except Exception as exc:
            self._authenticated = (facts, _Refused(exc))
            return None
        self._authenticated = (facts, principal)
        return None

    # --- HTTP --------------------------------------------------------------------------------

    def handle_http(self, raw: bytes, facts: TransportFacts) -> Outcome:
        """One POST body (already within the size limit) and its headers."""
        refusal = self.authenticate(facts)
        if refusal is not None:
            return refusal
        try:
            message = decode_message(raw)
        except JsonRpcError as exc:
            return error_reply(None, exc)
        return self.handle_http_message(message, facts)

    def handle_asgi(self, raw: bytes, raw_headers: Sequence[tuple[bytes, bytes]],
                    peer: str | None = None, headers: HeaderView | None = None,
                    index: Mapping[bytes, bytes] | None = None, received_ns: int = 0
                    ) -> Outcome:
        """:meth:`handle_http` for a body and the raw header pairs of an ASGI scope (a list or
        tuple that must not change afterwards), with the same answer. A modern request to a
        method with an express lane (``tools/call``) is judged in one pass over the raw pairs.
        ``headers``: the view of ``raw_headers`` if the transport built one already (else the
        facts get a view decoded only if something reads it); ``index``: their
        :func:`~toolkeeper.protocol.raw_headers.asgi_index`, if the transport made it;
        ``received_ns``: see :attr:`TransportFacts.received_ns`."""
        if headers is None and index is None:  # (made here, not later: the resolver reads it)
            index = asgi_index(raw_headers)
        facts = TransportFacts("http", headers if headers is not None
                               else HeaderView.deferred(raw_headers, index), peer, received_ns)
        refusal = self.authenticate(facts)
        if refusal is not None:
            return refusal
        try:
            message = decode_message(raw)
        except JsonRpcError as exc:
            return error_reply(None, exc)
        if type(message) is dict:
            name = message.get("method")
            method = self.methods.express(name) if type(name) is str else None
            if method is not None:
                if index is None:
                    index = asgi_index(raw_headers)
                if index is not None:
                    raw_version = index.get(RAW_PROTOCOL_VERSION)
                    outcome = (self._legacy_express(message, index, facts, method)
                               if raw_version is None or raw_version in LEGACY_BY_RAW
                               else self._modern.express(message, index, facts, method))
                    if outcome is not None:
                        return outcome
        return self.handle_http_message(message, facts)

    def _legacy_express(self, message: dict[str, Any], index: Mapping[bytes, bytes],
                        facts: TransportFacts, method: Method) -> Outcome | None:
        """The legacy lane of :meth:`handle_asgi` (its ``MCP-Protocol-Version`` a handshake
        version or absent): a :func:`~toolkeeper.protocol.legacy.plain_request` in the session
        of its one ``Mcp-Session-Id``, whose principal was found, is judged with that session
        found once (:meth:`LegacyPipeline.express`); anything else is None, before the session
        is looked up, for :meth:`handle_http_message` to judge (it answers exactly this way:
        the headers' era is the legacy one, each appears once, gate 1 passes)."""
        raw_id = index.get(RAW_SESSION_ID)
        if raw_id is None or self._stateless or type(self._authenticated[1]) is _Refused:
            return None
        request = plain_request(message)
        if request is None:
            return None
        return self._session_call(request, header_text(raw_id), facts, request.id, method)

    def handle_http_message(self, message: Any, facts: TransportFacts) -> Outcome:
        if self._authenticated[0] is not facts:  # (not yet, when called directly)
            refusal = self.authenticate(facts)
            if refusal is not None:
                return refusal
        found = self._authenticated[1]
        if type(found) is _Refused:  # no principal: answered before any method is looked at
            if select_http_era(message, facts.headers) is Era.MODERN:
                return error_reply(safe_id(message), found.exc)
            return answer_error_reply(safe_id(message), found.exc, Era.LEGACY)
        if select_http_era(message, facts.headers) is Era.MODERN:
            return self._modern.handle(message, facts, http=True)
        return self._legacy_http(message, facts)

    def _legacy_http(self, message: Any, facts: TransportFacts) -> Outcome:
        try:
            inbound = check_legacy_envelope(message)
            for name in (MCP_SESSION_ID, MCP_PROTOCOL_VERSION):
                if facts.headers.count(name) > 1:
                    raise invalid_request(f"{name} header appears more than once")
        except JsonRpcError as exc:
            return error_reply(safe_id(message), exc)
        if self._stateless:
            return self._legacy.after_envelope(inbound, stateless_session(inbound, facts), facts)
        session_id = facts.headers.get(MCP_SESSION_ID)
        if session_id is None:
            if isinstance(inbound, InboundRequest) and inbound.method == "initialize":
                return self._http_initialize(inbound, facts)
            return error_reply(safe_id(message), invalid_request("Bad Request: Missing session ID"))
        return self._session_call(inbound, session_id, facts, safe_id(message))

    def _session_call(self, inbound: Any, session_id: str, facts: TransportFacts,
                      answer_id: RequestId | None, method: Method | None = None) -> Outcome:
        """Gates 2-5 in the session ``session_id`` names (404 if the request's principal has
        no such session), through ``method``'s express lane when one is given."""
        session = self._owned_session(session_id, facts)
        if session is None:
            reply = error_reply(answer_id, invalid_request("Session not found"))
            return msgspec.structs.replace(reply, status=404)
        headers = ((MCP_SESSION_ID, session_id),)
        if method is not None:
            return self._legacy.express(inbound, session, facts, method, headers)
        return self._legacy.after_envelope(inbound, session, facts, headers)

    def _owner_of(self, facts: TransportFacts) -> SessionOwner | None:
        """Who the request's principal is, as a session owner (a resolver that refuses the
        request: None here; its refusal is answered later)."""
        try:
            return _owner(self._resolve_principal(facts))
        except Exception:
            return None

    def _owned_session(self, session_id: str, facts: TransportFacts) -> LegacySession | None:
        """The live session with that id, if the request's principal may use it: sessions are
        bound to the tenant and credential that initialized them (mcp-wire 10: another
        credential, even of the same tenant, gets 404)."""
        session = self.sessions.get(session_id)
        if session is None or session.owner is None:
            return session
        return session if self._owner_of(facts) == session.owner else None

    def _http_initialize(self, request: InboundRequest, facts: TransportFacts) -> Outcome:
        # Who is asking comes first: a request the resolver refuses gets its refusal and no
        # session (nor may it evict one). The session belongs to the principal's tenant and
        # credential; a principal without a tenant (the core's anonymous default) leaves it
        # unbound.
        try:
            principal = self._resolve_principal(facts)
            if self._admit_initialize is not None:  # the principal's rate, as its calls'
                self._admit_initialize(principal)
        except Exception as exc:  # the resolver's or the rate's refusal, as any legacy one
            return answer_error_reply(request.id, exc, Era.LEGACY)
        owner = _owner(principal)
        session = LegacySession()
        outcome = self._legacy.after_envelope(request, session, facts)
        if not isinstance(outcome, Reply) or outcome.is_error:
            return outcome
        session.owner = owner
        self.sessions.admit(session)  # never refused: the owner's (or the table's) idlest go
        assert session.id is not None
        return msgspec.structs.replace(outcome, headers=((MCP_SESSION_ID, session.id),))

    def end_session(self, facts: TransportFacts) -> int:
        """HTTP DELETE: terminate a legacy session. 200 done, 400 no (or a duplicated) id,
        404 unknown or expired."""
        ids = facts.headers.get_all(MCP_SESSION_ID)
        if len(ids) != 1:
            return 400
        if self._owned_session(ids[0], facts) is None:
            return 404
        return 200 if self.sessions.remove(ids[0]) else 404

    def session_for_stream(self, facts: TransportFacts) -> str | Reply:
        """HTTP GET (the legacy standalone stream): the live session's id, or the refusal:
        400 no (or a duplicated) id or not yet initialized, 404 unknown or expired."""
        ids = facts.headers.get_all(MCP_SESSION_ID)
        if len(ids) != 1:
            return error_reply(None, invalid_request("Bad Request: Missing session ID"))
        session = self._owned_session(ids[0], facts)
        if session is None:
            reply = error_reply(None, invalid_request("Session not found"))
            return msgspec.structs.replace(reply, status=404)
        if session.phase is not Phase.READY:
            return error_reply(None, invalid_request("session is not initialized"))
        return ids[0]

    # --- stream transports -----------------------------------------------------------------

    def open_stream(self, facts: TransportFacts | None = None) -> StreamConnection:
        return StreamConnection(facts if facts is not None else TransportFacts("stdio"))

    def handle_stream(self, conn: StreamConnection, raw: bytes | str, received_ns: int = 0,
                      in_flight: Container[RequestId] = ()) -> Outcome:
        """One line of a newline-delimited stream (``received_ns``: see
        :attr:`TransportFacts.received_ns`). A request whose id is ``in_flight`` (the ids of
        the connection's requests still running) is refused -32600 before anything runs."""
        try:
            message = decode_message(raw)
        except JsonRpcError as exc:
            return error_reply(None, exc)
        if in_flight and type(message) is dict and "method" in message:
            request_id = safe_id(message)
            if request_id is not None and request_id in in_flight:
                return error_reply(request_id, invalid_request("request id already in use"))
        return self.handle_stream_message(conn, message, received_ns)

    def handle_stream_message(self, conn: StreamConnection, message: Any, received_ns: int = 0
                              ) -> Outcome:
        facts = (conn.facts if not received_ns
                 else msgspec.structs.replace(conn.facts, received_ns=received_ns))
        if conn.era is None:
            conn.era = _stream_era(message)
        if conn.era is Era.MODERN:
            if (isinstance(message, dict) and message.get("method") == "initialize"
                    and "id" in message):
                return _initialize_on_modern(message)
            return self._modern.handle(message, facts, http=False)
        return self._legacy.handle(message, conn.session, facts)


def _owner(principal: Any) -> SessionOwner | None:
    """The principal's tenant and credential id, when it has a tenant (the core's principal is
    opaque: anything a resolver returns; a credential that is not a string counts as none)."""
    tenant = getattr(principal, "tenant", None)
    if not isinstance(tenant, str):
        return None
    credential = getattr(principal, "credential", None)
    return (tenant, credential if isinstance(credential, str) else None)


def _initialize_on_modern(message: dict[str, Any]) -> Reply:
    """``initialize`` on a modern stream connection: -32022 naming the modern versions, once
    the message is a valid request (rung 7 first: a malformed one is -32600, with its id when
    that could be read)."""
    try:
        request = classify_inbound(message)
        if not isinstance(request, InboundRequest):  # it has an id and a method: a request
            raise invalid_request("Body must be a single JSON-RPC request")
    except JsonRpcError as exc:
        return error_reply(safe_id(message), exc)
    requested = request.params.get("protocolVersion")
    return error_reply(request.id, unsupported_version(
        requested if isinstance(requested, str) else "", list(reversed(MODERN_VERSIONS)),
        "this connection serves the modern protocol era; initialize is not accepted"))
