"""Detectors over proxy evidence (SPEC 5.5): pure functions from one exchange's three views to
named findings, found through one table (:data:`DETECTORS`). Adding a detector is adding a row.

Seed findings (issue 16): an origin 400 or 404 JSON-RPC error the client got as a proxy 5xx
(``proxy.collapsed_protocol_error``); an egress body that is not the origin's
(``proxy.changed_body``); mirrored routing headers that disagree with the body at a hop
(``proxy.mirrored_header_mismatch``: the proxy authorizes by the headers, the origin executes
the body). A disagreement the origin refused with -32020 is the protocol working, not a
finding, unless the proxy introduced it (the origin hop disagrees where the ingress did not).

Deployment assertions (:class:`DeploymentAssertions`) are off unless configured: which egress
content types a deployment serves, and which media types ``Accept`` must carry at each hop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from toolkeeper.conformance.evidence import Body, ExchangeEvidence, header
from toolkeeper.conformance.mirror import mirror_disagreements
from toolkeeper.protocol.codes import HEADER_MISMATCH

__all__ = ["DETECTORS", "DeploymentAssertions", "Detector", "ProxyFinding", "detect",
           "detect_all"]

_PROTOCOL_ERROR_STATUSES: Final = frozenset({400, 404})
_MAX_PATHS: Final = 8
"""How many differing JSON paths a changed-body finding lists."""


@dataclass(frozen=True)
class DeploymentAssertions:
    """What a deployment promises beyond the protocol; None: not asserted. ``content_types``:
    the media types an egress body may have; ``accept``: the media types every hop's
    ``Accept`` must list."""

    content_types: tuple[str, ...] | None = None
    accept: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ProxyFinding:
    """One detector's verdict on one exchange: a stable ``id``, its fixed ``title``, the hop it
    was seen at and JSON ``detail`` (statuses, codes, header names, paths; never a value).

    Not the runner's :class:`~toolkeeper.conformance.judge.Finding` (``code``, ``problem``):
    that one is a wire rule broken inside one message and is reported as its string in the run
    report's ``finding`` field; this one names an exchange and a hop across three views and
    is reported as an object. One type would have to carry optional fields neither uses and
    change one of the two report formats, so the two stay distinct, named apart."""

    id: str
    title: str
    exchange: str
    hop: str
    detail: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "exchange": self.exchange, "hop": self.hop,
                "detail": dict(self.detail)}


Check = Callable[[ExchangeEvidence, DeploymentAssertions], Iterator[tuple[str, dict[str, Any]]]]


class Detector(NamedTuple):
    """A row: the finding's id and title, and the check yielding ``(hop, detail)`` per hit."""

    id: str
    title: str
    check: Check


def _error_code(body: Body) -> int | None:
    error = body.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return code if type(code) is int else None


def _collapsed(exchange: ExchangeEvidence, _: DeploymentAssertions
               ) -> Iterator[tuple[str, dict[str, Any]]]:
    origin, egress = exchange.origin, exchange.egress
    if origin is None or origin.status not in _PROTOCOL_ERROR_STATUSES or egress.status < 500:
        return
    code = _error_code(origin.body)
    if code is not None:
        yield "egress", {"originStatus": origin.status, "originCode": code,
                         "egressStatus": egress.status}


def _diff_paths(before: Any, after: Any, path: str, out: list[str]) -> None:
    if len(out) >= _MAX_PATHS:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            _diff_paths(before.get(key, _Missing), after.get(key, _Missing), f"{path}.{key}", out)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (b, a) in enumerate(zip(before, after, strict=True)):
            _diff_paths(b, a, f"{path}[{index}]", out)
    elif type(before) is not type(after) or before != after:
        out.append(path)


class _Missing:
    """A key one side lacks (a distinct type, so it differs from any JSON value)."""


def _changed_body(exchange: ExchangeEvidence, _: DeploymentAssertions
                  ) -> Iterator[tuple[str, dict[str, Any]]]:
    origin, egress = exchange.origin, exchange.egress
    if origin is None or origin.body.digest == egress.body.digest:
        return
    detail: dict[str, Any] = {"originKind": origin.body.kind, "egressKind": egress.body.kind,
                              "originDigest": origin.body.digest,
                              "egressDigest": egress.body.digest}
    if origin.body.kind == egress.body.kind == "json":
        paths: list[str] = []
        _diff_paths(origin.body.value, egress.body.value, "$", paths)
        detail["paths"] = paths
    yield "egress", detail


def _mirrored(exchange: ExchangeEvidence, _: DeploymentAssertions
              ) -> Iterator[tuple[str, dict[str, Any]]]:
    origin = exchange.origin
    at_ingress = mirror_disagreements(exchange.ingress.headers, exchange.ingress.body)
    at_origin = (() if origin is None
                 else mirror_disagreements(origin.forwarded_headers, origin.forwarded_body))
    # Executed: the origin saw the request and did not refuse it at the header rung.
    executed = origin is not None and _error_code(origin.body) != HEADER_MISMATCH
    if at_ingress and executed:
        yield "ingress", {"headers": list(at_ingress), "introduced": False}
    if at_origin and (executed or at_origin != at_ingress):
        yield "origin", {"headers": list(at_origin), "introduced": at_origin != at_ingress}


def _media_type(value: str | None) -> str | None:
    return None if value is None else value.split(";")[0].strip().lower()


def _content_type(exchange: ExchangeEvidence, assertions: DeploymentAssertions
                  ) -> Iterator[tuple[str, dict[str, Any]]]:
    egress = exchange.egress
    allowed = assertions.content_types
    if allowed is None or egress.body.kind == "empty":
        return
    media = _media_type(egress.content_type)
    if media not in allowed:
        yield "egress", {"contentType": media, "allowed": list(allowed)}


def _accept(exchange: ExchangeEvidence, assertions: DeploymentAssertions
            ) -> Iterator[tuple[str, dict[str, Any]]]:
    required = assertions.accept
    if required is None:
        return
    hops = [("ingress", exchange.ingress.headers)]
    if exchange.origin is not None:
        hops.append(("origin", exchange.origin.forwarded_headers))
    for hop, headers in hops:
        listed = {_media_type(part) for part in (header(headers, "accept") or "").split(",")}
        missing = [media for media in required if media not in listed]
        if missing:
            yield hop, {"missing": missing}


DETECTORS: Final[tuple[Detector, ...]] = (
    Detector("proxy.collapsed_protocol_error",
             "proxy collapsed a protocol error into HTTP 500", _collapsed),
    Detector("proxy.changed_body", "proxy changed the origin JSON-RPC body", _changed_body),
    Detector("proxy.mirrored_header_mismatch",
             "mirrored headers disagree with the JSON-RPC body", _mirrored),
    Detector("deployment.content_type",
             "egress content type is not one the deployment serves", _content_type),
    Detector("deployment.accept", "Accept lacks a media type the deployment requires", _accept),
)
"""Every detector, in report order."""


def detect(exchange: ExchangeEvidence, assertions: DeploymentAssertions | None = None,
           detectors: Iterable[Detector] = DETECTORS) -> tuple[ProxyFinding, ...]:
    """The findings of every detector on one exchange, in table order."""
    assertions = assertions or DeploymentAssertions()
    return tuple(ProxyFinding(row.id, row.title, exchange.name, hop, detail)
                 for row in detectors for hop, detail in row.check(exchange, assertions))


def detect_all(exchanges: Iterable[ExchangeEvidence],
               assertions: DeploymentAssertions | None = None) -> tuple[ProxyFinding, ...]:
    """The findings on every exchange, exchange by exchange."""
    return tuple(f for exchange in exchanges for f in detect(exchange, assertions))
