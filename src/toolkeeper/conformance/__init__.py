"""The conformance harness (SPEC 5). So far: proxy evidence (SPEC 5.5) through a real nginx,
with a recording tap on the origin side, redacted views (SPEC 5.6) and detectors."""

from toolkeeper.conformance.evidence import (
    Body,
    EgressView,
    ExchangeEvidence,
    IngressView,
    OriginView,
    RawRequest,
    RawResponse,
    build_exchange,
)
from toolkeeper.conformance.nginx import CONFIGS, NginxProxy, find_nginx
from toolkeeper.conformance.proxy_detectors import (
    DETECTORS,
    DeploymentAssertions,
    Detector,
    Finding,
    detect,
    detect_all,
)
from toolkeeper.conformance.proxy_run import (
    DEFAULT_EXCHANGES,
    ProxyReport,
    ProxyRequest,
    exchange,
    modern_request,
    run_proxy_evidence,
)
from toolkeeper.conformance.tap import RecordingTap

__all__ = [
    "CONFIGS",
    "DEFAULT_EXCHANGES",
    "DETECTORS",
    "Body",
    "DeploymentAssertions",
    "Detector",
    "EgressView",
    "ExchangeEvidence",
    "Finding",
    "IngressView",
    "NginxProxy",
    "OriginView",
    "ProxyReport",
    "ProxyRequest",
    "RawRequest",
    "RawResponse",
    "RecordingTap",
    "build_exchange",
    "detect",
    "detect_all",
    "exchange",
    "find_nginx",
    "modern_request",
    "run_proxy_evidence",
]
