"""The conformance harness (SPEC 5): wire transcripts replayed against any MCP endpoint.

Transcripts (:mod:`.transcript`, canonical JSON with a schema) are replayed by the runner
(:mod:`.runner`) through the one MCP client's transports, judged with the one set of wire
judgments in :mod:`toolkeeper.protocol` (:mod:`.judge`), and reported as data (:mod:`.report`);
rendering is separate (:mod:`.render`).
"""

from toolkeeper.conformance.corpus import builtin_corpus, load_directory
from toolkeeper.conformance.judge import Finding, Observation, Verdict, judge
from toolkeeper.conformance.report import CaseResult, Report
from toolkeeper.conformance.runner import run_transcripts
from toolkeeper.conformance.sessions import ERA_CHOICES, RunOptions
from toolkeeper.conformance.transcript import (
    Expectation,
    Transcript,
    canonical_text,
    parse_transcript,
    transcript_schema,
)

__all__ = [
    "ERA_CHOICES",
    "CaseResult",
    "Expectation",
    "Finding",
    "Observation",
    "Report",
    "RunOptions",
    "Transcript",
    "Verdict",
    "builtin_corpus",
    "canonical_text",
    "judge",
    "load_directory",
    "parse_transcript",
    "run_transcripts",
    "transcript_schema",
]
