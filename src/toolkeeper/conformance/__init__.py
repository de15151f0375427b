"""The conformance harness (SPEC 5): wire transcripts replayed against any MCP endpoint, and
proxy evidence.

Transcripts (:mod:`.transcript`, canonical JSON with a schema) are replayed by the runner
(:mod:`.runner`) through the one MCP client's transports, judged with the one set of wire
judgments in :mod:`toolkeeper.protocol` (:mod:`.judge`), and reported as data (:mod:`.report`);
rendering is separate (:mod:`.render`). Proxy evidence (SPEC 5.5, :mod:`.proxy_run`) runs
exchanges through a real nginx with a recording tap on the origin side (:mod:`.tap`), keeps
redacted ingress, origin and egress views (:mod:`.evidence`) and runs detectors over them
(:mod:`.proxy_detectors`). The SDK diff (SPEC 5.4, :mod:`.sdk_diff`) serves high-risk
fixtures' exact answers to the real SDK clients (:mod:`.sdk_clients`) from a replay origin
(:mod:`.sdk_origin`) and reports what each SDK changed (:mod:`.sdk_changes`), judged by the
role's policy (``sdk_diff_policy.json``).
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
    ProxyFinding,
    detect,
    detect_all,
)
from toolkeeper.conformance.proxy_run import (
    DEFAULT_BODY_BOUND,
    DEFAULT_EXCHANGES,
    ProxyReport,
    ProxyRequest,
    exchange,
    modern_request,
    run_proxy_evidence,
)
from toolkeeper.conformance.report import CaseResult, Report
from toolkeeper.conformance.runner import run_transcripts
from toolkeeper.conformance.sdk_changes import Change
from toolkeeper.conformance.sdk_diff import (
    ROLES,
    SDK_DIFF_FIXTURES,
    Host,
    Policy,
    SdkDiffReport,
    SdkRun,
    load_policy,
    run_sdk_diff,
    sdk_fixtures,
)
from toolkeeper.conformance.sdk_origin import ReplayOrigin
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
    "DEFAULT_BODY_BOUND",
    "DEFAULT_EXCHANGES",
    "DETECTORS",
    "ERA_CHOICES",
    "ROLES",
    "SDK_DIFF_FIXTURES",
    "Body",
    "CaseResult",
    "Change",
    "DeploymentAssertions",
    "Detector",
    "EgressView",
    "ExchangeEvidence",
    "Expectation",
    "Finding",
    "Host",
    "IngressView",
    "NginxProxy",
    "Observation",
    "OriginView",
    "Policy",
    "ProxyFinding",
    "ProxyReport",
    "ProxyRequest",
    "RawRequest",
    "RawResponse",
    "RecordingTap",
    "ReplayOrigin",
    "Report",
    "RunOptions",
    "SdkDiffReport",
    "SdkRun",
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
    "load_policy",
    "modern_request",
    "parse_transcript",
    "run_proxy_evidence",
    "run_sdk_diff",
    "run_transcripts",
    "sdk_fixtures",
    "transcript_schema",
]
