"""A proxy evidence run (SPEC 5.5): requests sent through a real nginx in front of an origin,
a recording tap between them, each exchange's three views redacted into evidence, and the
detectors' findings, as one :class:`ProxyReport` (data with a canonical JSON form and a digest;
rendering it is the harness CLI's business).

:func:`run_proxy_evidence` is the one entry point: ``client -> nginx -> tap -> origin``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from toolkeeper.conformance.evidence import (
    ExchangeEvidence,
    Headers,
    RawRequest,
    RawResponse,
    build_exchange,
)
from toolkeeper.conformance.nginx import NginxProxy, load_template
from toolkeeper.conformance.proxy_detectors import DeploymentAssertions, ProxyFinding, detect_all
from toolkeeper.conformance.tap import TAP_DEADLINE_S, TAP_MAX_BODY, RecordingTap
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import ConformanceError
from toolkeeper.protocol.headers import MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, NAME_PARAMS
from toolkeeper.protocol.meta import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
from toolkeeper.protocol.versions import LATEST_MODERN_VERSION

__all__ = ["DEFAULT_BODY_BOUND", "DEFAULT_EXCHANGES", "ProxyReport", "ProxyRequest", "exchange",
           "modern_request", "origin_not_modern", "run_proxy_evidence"]

_TIMEOUT_S: Final = 30.0
_ACCEPT: Final = "application/json, text/event-stream"
DEFAULT_BODY_BOUND: Final = 1024 * 1024
"""The most bytes of each body a report's views keep (1 MiB); a longer one is stored cut, with
``truncated: true`` and its full ``length``, its digest still that of the whole body."""


@dataclass(frozen=True)
class ProxyRequest:
    """One request to send through the proxy: a stable ``name`` (the exchange's name in the
    report), the headers and the raw body (sent as given, mismatches included)."""

    name: str
    headers: Headers
    body: bytes
    method: str = "POST"


def modern_request(name: str, method: str, params: Mapping[str, Any] | None = None, *,
                   request_id: int = 1, headers: Mapping[str, str | None] | None = None
                   ) -> ProxyRequest:
    """A 2026-07-28 request with its envelope and mirrored headers (mcp-wire 11);
    ``headers`` overrides them (None drops one), e.g. ``{"Mcp-Name": "other"}`` for a
    header/body mismatch."""
    body_params = {**(params or {}), "_meta": {PROTOCOL_VERSION_KEY: LATEST_MODERN_VERSION,
                                               CLIENT_CAPABILITIES_KEY: {}}}
    sent: dict[str, str | None] = {"content-type": "application/json", "accept": _ACCEPT,
                                   MCP_PROTOCOL_VERSION: LATEST_MODERN_VERSION,
                                   MCP_METHOD: method}
    key = NAME_PARAMS.get(method)
    if key is not None and isinstance(body_params.get(key), str):
        sent[MCP_NAME] = body_params[key]
    sent.update({k.lower(): v for k, v in (headers or {}).items()})
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}
    return ProxyRequest(name, tuple((k, v) for k, v in sent.items() if v is not None),
                        canonical_json(body))


DEFAULT_EXCHANGES: Final[tuple[ProxyRequest, ...]] = (
    modern_request("golden-tools-list", "tools/list"),
    modern_request("negative-header-body-mismatch", "tools/list", request_id=2,
                   headers={MCP_METHOD: "tools/call"}),
    modern_request("negative-method-not-found", "no/such-method", request_id=3),
)
"""Exchanges any modern origin answers without knowing its tools: a list (200), a method
header that disagrees with the body (400 -32020) and an unknown method (404 -32601)."""


def exchange(url: str, request: ProxyRequest) -> tuple[RawRequest, RawResponse]:
    """Send ``request`` to ``url`` and return the request as it went out and the answer.
    httpx for now; the harness will route this through the shared client transport (STYLE
    "one MCP client") once it can hand back raw status, headers and body bytes."""
    headers = list(request.headers)
    if not any(name.lower() == "accept-encoding" for name, _ in headers):
        # httpx would ask for gzip and decode it: the tap records the origin's bytes as sent,
        # so a compressed answer would differ from the decoded egress body.
        headers.append(("accept-encoding", "identity"))
    with httpx.Client(timeout=_TIMEOUT_S, trust_env=False) as client:
        response = client.request(request.method, url, headers=headers, content=request.body)
        sent = response.request
        return (RawRequest(request.method, sent.url.raw_path.decode("ascii"),
                           tuple((n.lower(), v) for n, v in sent.headers.multi_items()),
                           request.body),
                RawResponse(response.status_code,
                            tuple((n.lower(), v) for n, v in response.headers.multi_items()),
                            response.content))


@dataclass(frozen=True)
class ProxyReport:
    """A run's evidence: the configuration's name, every exchange's views and the findings."""

    config: str
    exchanges: tuple[ExchangeEvidence, ...]
    findings: tuple[ProxyFinding, ...] = field(default=())

    @property
    def titles(self) -> frozenset[str]:
        """The distinct finding titles (what a reader compares with the seed findings)."""
        return frozenset(f.title for f in self.findings)

    @property
    def issues(self) -> tuple[str, ...]:
        """The distinct finding titles, sorted: what went wrong, once each, however many
        exchanges showed it (seed 004's ``proxyIssues``; :attr:`findings` has the detail)."""
        return tuple(sorted(self.titles))

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config,
                "exchanges": [e.to_json() for e in self.exchanges],
                "findings": [f.to_json() for f in self.findings],
                "issues": list(self.issues)}

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())

    def digest(self) -> str:
        return hashlib.sha256(self.canonical()).hexdigest()


def _config_name(config: str | Path) -> str:
    return config if isinstance(config, str) else Path(config).name


def run_proxy_evidence(origin_url: str, config: str | Path = "correct",
                       exchanges: Iterable[ProxyRequest] = DEFAULT_EXCHANGES, *,
                       assertions: DeploymentAssertions | None = None,
                       body_bound: int = DEFAULT_BODY_BOUND, origin_bound: int = TAP_MAX_BODY,
                       origin_deadline_s: float = TAP_DEADLINE_S) -> ProxyReport:
    """Send ``exchanges`` one by one through nginx (``config``: ``"correct"``, ``"faulty"``
    or a template file) in front of ``origin_url`` and report the evidence and findings.
    :class:`~toolkeeper.errors.ConformanceError` when nginx is missing or does not start, or
    the tap cannot reach the origin or the origin does not finish an answer within
    ``origin_deadline_s`` (``conformance.origin_unreachable``), or an origin body is longer
    than ``origin_bound`` (``conformance.evidence_truncated``). Each view's stored body keeps
    at most ``body_bound`` bytes (:data:`DEFAULT_BODY_BOUND`)."""
    template = load_template(config)
    path = urlsplit(origin_url).path or "/"
    evidence: list[ExchangeEvidence] = []
    with (RecordingTap(origin_url, max_body=origin_bound, deadline_s=origin_deadline_s) as tap,
          NginxProxy(template, f"127.0.0.1:{tap.port}") as proxy):
        for request in exchanges:
            seen, failed = len(tap.records()), len(tap.failures())
            cut = len(tap.truncations())
            received_at = time.time()
            try:
                sent, answer = exchange(proxy.url + path, request)
            except httpx.HTTPError as exc:
                raise ConformanceError("the proxy did not answer", code="conformance.proxy_io",
                                       data={"exchange": request.name,
                                             "error": type(exc).__name__}) from None
            unreachable = tap.failures()[failed:]
            if unreachable:
                # No origin view, so nothing to compare: evidence without an origin is none.
                raise ConformanceError("the origin cannot be reached",
                                       code="conformance.origin_unreachable",
                                       data={"exchange": request.name, "error": unreachable[0]})
            truncated = tap.truncations()[cut:]
            if truncated:
                # An error, not a finding: findings judge the proxy, and here the tap itself
                # passed the proxy a cut body, so the origin and egress views both hold bytes
                # the origin never sent as a whole; any verdict on them would be the tap's.
                read, declared = truncated[0]
                raise ConformanceError("origin body exceeded the evidence bound",
                                       code="conformance.evidence_truncated",
                                       data={"exchange": request.name, "bound": origin_bound,
                                             "read": read, "length": declared})
            recorded = tap.records()[seen:]
            forwarded, answered = recorded[0] if recorded else (None, None)
            evidence.append(build_exchange(request.name, sent, answer, forwarded=forwarded,
                                           answered=answered, received_at=received_at,
                                           sent_at=time.time(), body_bound=body_bound))
    exchanges_done = tuple(evidence)
    not_modern = origin_not_modern(exchanges_done)
    return ProxyReport(_config_name(config), exchanges_done,
                       (not_modern,) if not_modern is not None
                       else detect_all(exchanges_done, assertions))


_MODERN_ERRORS: Final = frozenset({-32020, -32021, -32022})
"""Error codes only a 2026-07-28 server sends (header mismatch, missing capability,
unsupported version)."""


def _speaks_modern(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    result, error = value.get("result"), value.get("error")
    if isinstance(result, dict) and "resultType" in result:
        return True
    return isinstance(error, dict) and error.get("code") in _MODERN_ERRORS


def origin_not_modern(exchanges: Iterable[ExchangeEvidence]) -> ProxyFinding | None:
    """One finding when the origin does not speak the 2026-07-28 era at all (None when it
    does, or when it cannot be told): every origin answer is JSON (and whole), and none is a
    result with ``resultType`` or an error only the modern era sends. Then the exchanges'
    deliberate header/body mismatches and the proxy's handling of them judge nothing about the
    hops (a legacy-only origin answers each one the same way, -32000 without a session, say),
    so this finding replaces the hop detectors' findings and blames no hop."""
    views = [e.origin for e in exchanges if e.origin is not None]
    if not views or any(view.body.kind != "json" or view.body.truncated for view in views):
        return None
    if any(_speaks_modern(view.body.value) for view in views):
        return None
    codes = sorted({code for view in views
                    if isinstance(view.body.value, dict)
                    and isinstance(error := view.body.value.get("error"), dict)
                    and type(code := error.get("code")) is int})
    return ProxyFinding("origin.not_modern",
                        "origin does not speak the 2026-07-28 era", "", "origin",
                        {"statuses": sorted({view.status for view in views}),
                         "errorCodes": codes, "exchanges": len(views)})
