"""The release gate (SPEC 6, seed 004): health windows so far (:mod:`~toolkeeper.gate.windows`)."""

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
