"""The one exception root of toolkeeper, and its tree.

Every error the package raises on purpose derives from :class:`ToolkeeperError` and carries a
stable ``code`` (a dotted rule id that tests and scripts match on; messages are for people and
may change) plus optional structured ``data``::

    ToolkeeperError                      code: "toolkeeper.error"
    ├── ContractError                    a contract file or value is malformed ("contract.*")
    │   └── SemverError                  a version string is not semver 2.0.0 ("semver.invalid")
    ├── SchemaError                      a JSON Schema cannot be compiled ("schema.invalid"),
    │                                    is not self-contained ("schema.ref_external",
    │                                    "schema.ref_unresolved", "schema.ref_cycle") or asserts
    │                                    an unknown format ("schema.format_unknown")
    ├── RegistryError                    registry operations ("registry.*")
    │   ├── PublishRefusedError          the publish guard said no (rule, changes, minimumVersion)
    │   ├── NotFoundError                no such tool or version ("registry.not_found")
    │   ├── LifecycleError               an illegal status transition ("lifecycle.*")
    │   └── StoreError                   the storage backend failed ("registry.store")
    ├── PrincipalError                   unknown clearance or malformed principal ("principal.*")
    ├── AuthenticationError              a request's credential is missing, malformed, expired or
    │                                    unverifiable ("auth.<reason>"); HTTP answers it 401
    ├── SealError                        a sealed token (cursor, request state) is refused
    │                                    ("seal.<reason>"; toolkeeper.protocol.sealing)
    ├── AskError                         a request a handler sent its client (legacy era) got no
    │                                    result ("ask.<reason>": client_error, timeout, busy,
    │                                    unavailable, gone, bad_result; data.error holds the
    │                                    client's JSON-RPC error)
    ├── ConfigError                      the gateway's configuration file or flags are refused
    │                                    ("config.*"; ``data.key`` is the dotted key)
    ├── ClientError                      the MCP client (``toolkeeper.client``) failed ("client.*")
    │   ├── ClientConnectionError        the peer refused or dropped the connection
    │   ├── ClientTimeoutError           no complete answer within the bound
    │   ├── ServerUnavailableError       the peer answered HTTP 503
    │   ├── ClientAuthenticationError    the peer refused the credential (HTTP 401 or 403)
    │   ├── ProtocolViolationError       an answer the era's validator rejects
    │   │                                (``data.problems``: JSON paths and what is wrong)
    │   ├── RequestRefusedError          a valid JSON-RPC error answered a request the client
    │   │                                cannot go on without (``data.error``: that error)
    │   └── EraSelectionError            no era could be selected under the policy
    │                                    (``data.decision``: the recorded decision)
    ├── ConformanceError                 the conformance harness refused its input: a transcript
    │                                    that is not canonical JSON ("conformance.not_canonical")
    │                                    or breaks the transcript schema ("conformance.
    │                                    transcript_invalid"), or a target it cannot reach
    │                                    ("conformance.unreachable"), or a proxy it cannot set
    │                                    up (no binary, one that does not start, an unknown
    │                                    configuration: "conformance.proxy_*")
    └── JsonRpcError                     a protocol error with a JSON-RPC code (protocol layer)
        └── CapabilityRequiredError      a tool handler needs a client capability the caller
                                         lacks (-32021); the one protocol error a handler may
                                         raise: any other error from a handler is an isError
                                         result (SPEC 3.4.5)

``JsonRpcError`` lives here (not in ``protocol``) so that every layer can raise it without
importing the protocol package; the protocol core is the single place that turns it into a
wire error.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AskError",
    "AuthenticationError",
    "CapabilityRequiredError",
    "ClientAuthenticationError",
    "ClientConnectionError",
    "ClientError",
    "ClientTimeoutError",
    "ConfigError",
    "ConformanceError",
    "ContractError",
    "EraSelectionError",
    "JsonRpcError",
    "LifecycleError",
    "NotFoundError",
    "PrincipalError",
    "ProtocolViolationError",
    "PublishRefusedError",
    "RegistryError",
    "RequestRefusedError",
    "SchemaError",
    "SemverError",
    "ServerUnavailableError",
    "StoreError",
    "ToolkeeperError",
]


class ToolkeeperError(Exception):
    """Root of every error toolkeeper raises on purpose."""

    default_code = "toolkeeper.error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        path: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.path = path
        self.data: dict[str, Any] = dict(data or {})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready rendering: code, message, and path/data when present."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.path is not None:
            out["path"] = self.path
        if self.data:
            out["data"] = self.data
        return out


class ContractError(ToolkeeperError):
    """A contract (file or value) is malformed: unknown key, bad value, wrong type."""

    default_code = "contract.invalid"


class SemverError(ContractError):
    """A version string is not a semver 2.0.0 version (ranges and junk included)."""

    default_code = "semver.invalid"


class SchemaError(ToolkeeperError):
    """A JSON Schema is not a valid Draft 2020-12 schema, or cannot be compiled."""

    default_code = "schema.invalid"


class RegistryError(ToolkeeperError):
    """Base of registry failures."""

    default_code = "registry.error"


class PublishRefusedError(RegistryError):
    """The publish guard refused: ``code`` is the rule id, ``data`` holds the details.

    ``data`` keys: ``rule``, ``bump`` (the classifier's verdict, when one was computed),
    ``changes`` (the classifier's changes), ``minimumVersion`` (smallest version that would pass,
    when one exists).
    """

    default_code = "publish.refused"


class NotFoundError(RegistryError):
    """No such tool, or no such version of it."""

    default_code = "registry.not_found"


class LifecycleError(RegistryError):
    """An illegal lifecycle transition (e.g. deprecating a retired version)."""

    default_code = "registry.lifecycle"


class AskError(ToolkeeperError):
    """A request a handler sent its client (``elicitation/create``, ``sampling/createMessage``,
    ``roots/list``; legacy era) got no result. ``code``: ``ask.client_error`` (the client
    answered a JSON-RPC error: ``data.error`` is it), ``ask.timeout`` (no answer in time),
    ``ask.busy`` (too many requests await answers), ``ask.unavailable`` (the call's response
    cannot carry a request: JSON mode, no session), ``ask.gone`` (the session ended while
    waiting), ``ask.bad_result`` (the result is not a JSON object). A handler that does not
    catch it fails as any handler error does (an ``isError`` result)."""

    default_code = "ask.error"


class StoreError(RegistryError):
    """The storage backend failed; nothing was changed."""

    default_code = "registry.store"


class PrincipalError(ToolkeeperError):
    """A principal is malformed, or names an unknown clearance (never defaulted)."""

    default_code = "principal.invalid"


class ConfigError(ToolkeeperError):
    """The gateway's configuration is refused at start: ``code`` is ``config.*`` and
    ``data["key"]`` the dotted key (``""`` for the file as a whole)."""

    default_code = "config.invalid"


class ClientError(ToolkeeperError):
    """Base of the MCP client's failures (``toolkeeper.client``)."""

    default_code = "client.error"


class ClientConnectionError(ClientError):
    """The peer refused the connection, or dropped it before a complete answer."""

    default_code = "client.connection"


class ClientTimeoutError(ClientError):
    """No complete answer arrived within the configured bound."""

    default_code = "client.timeout"


class ServerUnavailableError(ClientError):
    """The peer answered HTTP 503 (overloaded, shutting down): transient by nature."""

    default_code = "client.unavailable"


class ClientAuthenticationError(ClientError):
    """The peer refused the request's credential (HTTP 401: missing, invalid or expired;
    403: not enough scope, or a refused Origin). Not an era observation, and not transient:
    ``data["httpStatus"]``; the token is never quoted."""

    default_code = "client.unauthorized"


class ProtocolViolationError(ClientError):
    """An answer the selected era's validator rejects; ``data["problems"]`` lists each as
    ``"<json path>: <what is wrong>"``. Also an answer larger than the byte bound."""

    default_code = "client.protocol_violation"


class RequestRefusedError(ClientError):
    """The server answered with a well-formed JSON-RPC error a request the client cannot go on
    without (``tools/list``, the era's handshake): ``data["error"]`` is the error object."""

    default_code = "client.refused"


class EraSelectionError(ClientError):
    """No protocol era could be selected under the policy (SPEC 5.1): ``data["decision"]`` is
    the canonical form of the recorded decision."""

    default_code = "client.era_unselected"


class ConformanceError(ToolkeeperError):
    """The conformance harness refused a transcript, could not reach its target, or cannot set
    up what a run needs (a reverse proxy, its configuration); findings about the target are
    evidence, never this error."""

    default_code = "conformance.error"


class AuthenticationError(ToolkeeperError):
    """A request's credential is missing, malformed, expired or unverifiable.

    ``reason`` is one of :data:`toolkeeper.auth.REASONS` (logged and counted, never sent:
    the HTTP answer is a fixed 401 whatever the reason). ``token_sent`` says whether the
    request carried a credential at all; ``challenge`` is the ``WWW-Authenticate`` value the
    401 carries (the principal resolver, which knows the resource metadata URL, sets it);
    ``credential`` is the id of the credential refused when it was identified (a stored key's
    id, a verified token's ``iss#sub``; never a secret), for the refusal log only."""

    default_code = "auth.refused"

    def __init__(self, reason: str, *, token_sent: bool = True,
                 challenge: str = "Bearer", credential: str | None = None) -> None:
        super().__init__(f"authentication refused: {reason}", code=f"auth.{reason}")
        self.reason = reason
        self.token_sent = token_sent
        self.challenge = challenge
        self.credential = credential


class JsonRpcError(ToolkeeperError):
    """A protocol-level error: a JSON-RPC ``code`` (int), message and optional ``data``.

    Raised anywhere below the protocol boundary; the boundary renders it verbatim. Its
    ``rpc_data`` is sent as ``error.data`` (any JSON value, or omitted when ``None``).
    """

    default_code = "jsonrpc.error"

    def __init__(self, rpc_code: int, message: str, rpc_data: Any = None) -> None:
        super().__init__(message, code=f"jsonrpc.{rpc_code}")
        self.rpc_code = rpc_code
        self.rpc_data = rpc_data


class CapabilityRequiredError(JsonRpcError):
    """Raised by ``ToolContext.require_capabilities``: the call needs client capabilities the
    caller did not declare (-32021 with ``requiredCapabilities``; -32602 in the legacy era)."""

    default_code = "jsonrpc.capability_required"
