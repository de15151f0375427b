"""Whether a candidate's latencies are shifted above a baseline's: the one-sided Mann-Whitney U
test (SciPy's ``mannwhitneyu``, ``alternative="greater"``, its ``auto`` method: exact for small
samples without ties, the normal approximation with tie correction otherwise). A histogram
window takes part as its calls at their buckets' upper bounds (ties, corrected for), so its
test is as coarse as its buckets. SciPy comes with ``pip install toolkeeper[gate]``."""

from __future__ import annotations

from collections.abc import Sequence

from toolkeeper.errors import ToolkeeperError

__all__ = ["require_scipy", "shifted_above"]


def require_scipy() -> None:
    """ToolkeeperError ``gate.needs_scipy`` when SciPy is not installed."""
    try:
        import scipy.stats  # noqa: F401
    except ImportError:
        raise ToolkeeperError("the policy's baseline.mannWhitney needs SciPy: "
                              "pip install 'toolkeeper[gate]'", code="gate.needs_scipy") from None


def shifted_above(candidate: Sequence[float], baseline: Sequence[float]) -> float:
    """The p-value of "the candidate's latencies are stochastically greater than the
    baseline's" (small: they are)."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(candidate, baseline, alternative="greater").pvalue)
