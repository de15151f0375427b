"""Proxy evidence as data (SPEC 5.5): the three views of one exchange through a reverse proxy.

* **ingress**: what the client sent the proxy (route, headers, content type, body, time);
* **origin**: what the proxy forwarded to the origin (headers, body and its digest) and what the
  origin answered (status, headers, body), as a recording tap between them saw it; None when
  the proxy never forwarded the request;
* **egress**: what the client got back (status, headers, content type, body, time).

The views are built from raw HTTP messages (:class:`RawRequest`, :class:`RawResponse`) by
:func:`build_exchange`, which redacts them first (SPEC 5.6, with the gateway's one
:func:`~toolkeeper.contracts.redaction.redact`): a secret never reaches a view, so nothing
serialized, hashed or written from one can hold it. Which rule fired at which path is kept,
never the value. A view is frozen; :meth:`ExchangeEvidence.to_json` is its canonical JSON form,
with the times left out and volatile header values (dates, hosts with ephemeral ports)
normalized, so equal exchanges have equal bytes and :meth:`ExchangeEvidence.digest`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.redaction import REDACTED, Redaction, redact, redact_text
from toolkeeper.errors import ContractError

__all__ = [
    "VOLATILE",
    "VOLATILE_HEADERS",
    "Body",
    "EgressView",
    "ExchangeEvidence",
    "IngressView",
    "OriginView",
    "RawRequest",
    "RawResponse",
    "build_exchange",
    "header",
    "redact_response",
    "redact_value",
]

Headers = tuple[tuple[str, str], ...]
"""``(lowercase name, value)`` pairs in the order they travelled, duplicates kept."""

VOLATILE: Final = "<volatile>"
"""What a volatile header's value becomes in the canonical form."""

VOLATILE_HEADERS: Final = frozenset({"date", "host", "x-forwarded-for", "x-real-ip",
                                     "x-forwarded-host", "x-forwarded-port", "mcp-session-id"})
"""Headers whose values change from run to run (clocks, ephemeral ports, minted session ids):
kept in the view, normalized out of the canonical form."""

_SENTINEL_HEAD: Final = "=?base64?"
_SENTINEL_TAIL: Final = "?="
_TEXT_REDACTION: Final = "text.named_value"
"""The evidence rule for a text body masked by name (``password=...``) rather than by shape."""


@dataclass(frozen=True)
class RawRequest:
    """An HTTP request as it travelled (unredacted: never stored, only turned into a view)."""

    method: str
    path: str
    headers: Headers
    body: bytes


@dataclass(frozen=True)
class RawResponse:
    """An HTTP response as it travelled (unredacted: never stored)."""

    status: int
    headers: Headers
    body: bytes


@dataclass(frozen=True)
class Body:
    """A redacted message body: ``json`` (the decoded value), ``text`` (anything else, e.g. an
    HTML error page or an SSE stream) or ``empty``; ``digest`` is the SHA-256 of its canonical
    form, so two bodies are the same JSON value exactly when their digests are equal."""

    kind: str
    value: Any
    digest: str
    length: int | None = None
    """The raw body's byte length, set only when :attr:`value` was cut to the evidence bound."""

    @property
    def truncated(self) -> bool:
        return self.length is not None

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "value": self.value, "digest": self.digest}
        if self.length is not None:
            out.update(truncated=True, length=self.length)
        return out

    def get(self, key: str) -> Any:
        """``value[key]`` of a JSON object body, else None."""
        return self.value.get(key) if self.kind == "json" and isinstance(self.value, dict) else None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _redact_body(raw: bytes, content_type: str | None, path: str,
                 evidence: list[Redaction]) -> Body:
    if not raw:
        return Body("empty", None, _sha256(b""))
    if content_type is None or "json" in content_type.split(";")[0].lower():
        try:
            value = loads_json(raw)
        except ContractError:
            pass
        else:
            value = _redact_json(value, path, evidence)
            return Body("json", value, _sha256(canonical_json(value)))
    text = _redact_json(raw.decode("utf-8", errors="replace"), path, evidence)
    return Body("text", text, _sha256(text.encode("utf-8")))


def _bounded(body: Body, raw_length: int, bound: int | None) -> Body:
    """``body`` with its stored value cut to ``bound`` bytes (a JSON value as its canonical
    text) when the raw body is longer; the digest stays that of the whole redacted value, so
    views still compare as wholes."""
    if bound is None or raw_length <= bound:
        return body
    text = body.value if isinstance(body.value, str) else canonical_json(body.value).decode()
    cut = text.encode("utf-8")[:bound].decode("utf-8", errors="ignore")
    return Body(body.kind, cut, body.digest, raw_length)


def _mask_text(value: Any, path: str, evidence: list[Redaction]) -> Any:
    """Every string in ``value`` through :func:`redact_text` too, which also finds a secret by
    the name written before it inside the text (``('x-api-key', '...')``, ``password=...``)."""
    if isinstance(value, str):
        masked = redact_text(value)
        if masked != value:
            evidence.append(Redaction((path, _TEXT_REDACTION)))
        return masked
    if isinstance(value, dict):
        return {k: _mask_text(v, f"{path}.{k}", evidence) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_text(v, f"{path}[{i}]", evidence) for i, v in enumerate(value)]
    return value


def _redact_json(value: Any, path: str, evidence: list[Redaction]) -> Any:
    """``value`` redacted by the gateway's rules (denied keys, secret shapes), then by name
    inside text; the evidence paths put under ``path`` (the rules report them from ``$``)."""
    redacted, found = redact(value)
    evidence.extend(Redaction((path + p[1:], rule)) for p, rule in found)
    return _mask_text(redacted, path, evidence)


def _mask_header_text(value: Any, path: str, evidence: list[Redaction]) -> Any:
    """A header value through the text pass too; an ``=?base64?...?=`` value (mcp-wire 4.2)
    only inside its markers: the pass takes the ``?=`` tail for a URL's query and would mask
    it, and the mirror judgments compare these values."""
    if (isinstance(value, str) and value.startswith(_SENTINEL_HEAD)
            and value.endswith(_SENTINEL_TAIL) and len(value) >= len(_SENTINEL_HEAD) + 2):
        inner = _mask_text(value[len(_SENTINEL_HEAD):-len(_SENTINEL_TAIL)], path, evidence)
        return f"{_SENTINEL_HEAD}{inner}{_SENTINEL_TAIL}"
    return _mask_text(value, path, evidence)


def _redact_headers(headers: Headers, path: str, evidence: list[Redaction]) -> Headers:
    """Each header by its name (denied names), its value's shapes and names inside it."""
    out: list[tuple[str, str]] = []
    for name, value in headers:
        key = name.lower()
        redacted, found = redact({key: value})
        evidence.extend(Redaction((path + p[1:], rule)) for p, rule in found)
        redacted = _mask_header_text(redacted[key], f"{path}.{key}", evidence)
        out.append((key, redacted if isinstance(redacted, str) else REDACTED))
    return tuple(out)


def header(headers: Headers, name: str) -> str | None:
    """The first value of ``name`` (lowercase) in ``headers``, or None."""
    return next((v for n, v in headers if n == name), None)


def _headers_json(headers: Headers) -> list[list[str]]:
    return [[n, VOLATILE if n in VOLATILE_HEADERS else v] for n, v in headers]


@dataclass(frozen=True)
class IngressView:
    """The request the client sent the proxy. ``route`` is ``METHOD /path``; ``received_at``
    (epoch seconds) is left out of the canonical form."""

    route: str
    headers: Headers
    content_type: str | None
    body: Body
    received_at: float

    def to_json(self) -> dict[str, Any]:
        return {"route": self.route, "headers": _headers_json(self.headers),
                "contentType": self.content_type, "body": self.body.to_json()}


@dataclass(frozen=True)
class OriginView:
    """What the proxy forwarded (route, headers, body) and what the origin answered."""

    route: str
    forwarded_headers: Headers
    forwarded_body: Body
    status: int
    headers: Headers
    body: Body

    def to_json(self) -> dict[str, Any]:
        return {"route": self.route, "forwardedHeaders": _headers_json(self.forwarded_headers),
                "forwardedBodyDigest": self.forwarded_body.digest,
                "forwardedBody": self.forwarded_body.to_json(), "status": self.status,
                "headers": _headers_json(self.headers), "body": self.body.to_json()}


@dataclass(frozen=True)
class EgressView:
    """The answer the client got from the proxy; ``sent_at`` is left out of the canonical form."""

    status: int
    headers: Headers
    content_type: str | None
    body: Body
    sent_at: float

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "headers": _headers_json(self.headers),
                "contentType": self.content_type, "body": self.body.to_json()}


@dataclass(frozen=True)
class ExchangeEvidence:
    """One exchange's three views (``origin`` None: the proxy answered without forwarding) and
    the redactions applied to build them: ``(path, rule)``, never the value."""

    name: str
    ingress: IngressView
    origin: OriginView | None
    egress: EgressView
    redactions: tuple[Redaction, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ingress": self.ingress.to_json(),
                "origin": None if self.origin is None else self.origin.to_json(),
                "egress": self.egress.to_json(),
                "redactions": [{"path": p, "rule": r} for p, r in self.redactions]}

    def canonical(self) -> bytes:
        """The canonical JSON bytes (sorted keys, compact, UTF-8)."""
        return canonical_json(self.to_json())

    def digest(self) -> str:
        """SHA-256 (hex) of :meth:`canonical`."""
        return _sha256(self.canonical())


def _lower(headers: Headers) -> Headers:
    return tuple((n.lower(), v) for n, v in headers)


def build_exchange(name: str, request: RawRequest, response: RawResponse, *,
                   forwarded: RawRequest | None = None, answered: RawResponse | None = None,
                   received_at: float = 0.0, sent_at: float = 0.0,
                   body_bound: int | None = None) -> ExchangeEvidence:
    """The redacted views of one exchange: ``request``/``response`` as the client saw them,
    ``forwarded``/``answered`` as the tap saw them (both or neither); each view's stored body
    at most ``body_bound`` bytes (None: whole), marked ``truncated`` with its full length."""
    evidence: list[Redaction] = []

    def view_body(message: RawRequest | RawResponse, path: str) -> Body:
        return _bounded(_redact_body(message.body,
                                     header(_lower(message.headers), "content-type"),
                                     path, evidence), len(message.body), body_bound)

    ingress = IngressView(
        _redact_json(f"{request.method} {request.path}", "$.ingress.route", evidence),
        _redact_headers(request.headers, "$.ingress.headers", evidence),
        header(_lower(request.headers), "content-type"),
        view_body(request, "$.ingress.body"), received_at)
    origin = None
    if forwarded is not None and answered is not None:
        origin = OriginView(
            _redact_json(f"{forwarded.method} {forwarded.path}", "$.origin.route", evidence),
            _redact_headers(forwarded.headers, "$.origin.forwardedHeaders", evidence),
            view_body(forwarded, "$.origin.forwardedBody"), answered.status,
            _redact_headers(answered.headers, "$.origin.headers", evidence),
            view_body(answered, "$.origin.body"))
    egress = EgressView(
        response.status, _redact_headers(response.headers, "$.egress.headers", evidence),
        header(_lower(response.headers), "content-type"),
        view_body(response, "$.egress.body"), sent_at)
    return ExchangeEvidence(name, ingress, origin, egress, tuple(evidence))


def redact_value(value: Any, path: str, evidence: list[Redaction]) -> Any:
    """A JSON value redacted as a view's body is (denied keys, secret shapes, names inside
    text), the rules that fired appended to ``evidence`` under ``path``."""
    return _redact_json(value, path, evidence)


def redact_response(response: RawResponse, path: str, evidence: list[Redaction]
                    ) -> tuple[Headers, Body]:
    """A raw response's headers and body redacted as an egress view's are."""
    return (_redact_headers(response.headers, f"{path}.headers", evidence),
            _redact_body(response.body, header(_lower(response.headers), "content-type"),
                         f"{path}.body", evidence))
