"""The conformance harness (SPEC 5): wire transcripts replayed against any MCP endpoint, and
proxy evidence.

Transcripts (:mod:`.transcript`, canonical JSON with a schema) are replayed by the runner
(:mod:`.runner`) through the one MCP client's transports, judged with the one set of wire
judgments in :mod:`toolkeeper.protocol` (:mod:`.judge`), and reported as data (:mod:`.report`);
rendering is separate (:mod:`.render`). Proxy evidence (SPEC 5.5, :mod:`.proxy_run`) runs
exchanges through a real nginx with a recording tap on the origin side (:mod:`.tap`), keeps
redacted ingress, origin and egress views (:mod:`.evidence`) and runs detectors over them
(:mod:`.proxy_detectors`).
"""

from toolkeeper.conformance.corpus import builtin_corpus, load_directory
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
from toolkeeper.conformance.judge import Finding, Observation, Verdict, judge
from toolkeeper.conformance.nginx import CONFIGS, NginxProxy, find_nginx
from toolkeeper.conformance.proxy_detectors import (
    DETECTORS,
    DeploymentAssertions,
    Detector,
    detect,
    detect_all,
)
from toolkeeper.conformance.proxy_detectors import (
    Finding as ProxyFinding,
)
from toolkeeper.conformance.proxy_run import (
    DEFAULT_EXCHANGES,
    ProxyReport,
    ProxyRequest,
    exchange,
    modern_request,
    run_proxy_evidence,
)
from toolkeeper.conformance.report import CaseResult, Report
from toolkeeper.conformance.runner import run_transcripts
from toolkeeper.conformance.sessions import ERA_CHOICES, RunOptions
from toolkeeper.conformance.tap import RecordingTap
from toolkeeper.conformance.transcript import (
    Expectation,
    Transcript,
    canonical_text,
    parse_transcript,
    transcript_schema,
)

__all__ = [
    "CONFIGS",
    "DEFAULT_EXCHANGES",
    "DETECTORS",
    "ERA_CHOICES",
    "Body",
    "CaseResult",
    "DeploymentAssertions",
    "Detector",
    "EgressView",
    "ExchangeEvidence",
    "Expectation",
    "Finding",
    "IngressView",
    "NginxProxy",
    "Observation",
    "OriginView",
    "ProxyFinding",
    "ProxyReport",
    "ProxyRequest",
    "RawRequest",
    "RawResponse",
    "RecordingTap",
    "Report",
    "RunOptions",
    "Transcript",
    "Verdict",
    "build_exchange",
    "builtin_corpus",
    "canonical_text",
    "detect",
    "detect_all",
    "exchange",
    "find_nginx",
    "judge",
    "load_directory",
    "modern_request",
    "parse_transcript",
    "run_proxy_evidence",
    "run_transcripts",
    "transcript_schema",
]
