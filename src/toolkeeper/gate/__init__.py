"""The release gate (SPEC 6, seed 004) so far: health windows (:mod:`~toolkeeper.gate.windows`,
from samples, the call log or the metrics), rollback evidence's verification
(:mod:`~toolkeeper.gate.rollback`) and the evidence bundle's digests
(:mod:`~toolkeeper.gate.evidence`)."""

from toolkeeper.gate.windows import (
    FAILED,
    HEALTHY,
    IGNORED,
    INCONCLUSIVE,
    HistogramWindow,
    Observed,
    Sample,
    Verdict,
    Window,
    WindowPolicy,
    WindowResult,
    evaluate,
    percentile,
)

__all__ = ["FAILED", "HEALTHY", "IGNORED", "INCONCLUSIVE", "HistogramWindow", "Observed", "Sample",
           "Verdict", "Window", "WindowPolicy", "WindowResult", "evaluate", "percentile"]
