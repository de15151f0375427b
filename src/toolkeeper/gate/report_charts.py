"""The health windows drawn for the gate's HTML report: the candidate's latency distribution
against the baseline's (an empirical CDF: of the samples, or of a metrics window's cumulative
bucket counts as a step at each bucket's upper bound) with the policy's latency limit, and the
error rate over time where samples carry ``atS``.

Each chart is an inline SVG drawn by matplotlib's SVG backend on a :class:`~matplotlib.figure.
Figure` of its own (no pyplot, so no state is shared between calls), with its text as paths (no
fonts to fetch), no metadata block (no date, no creator URL) and a fixed hash salt: the same
windows draw the same bytes. Only fixed labels and numbers reach matplotlib, never evidence text
(a ``$`` would start mathtext); the HTML around a chart names the tool and version, escaped.
matplotlib comes with ``pip install 'toolkeeper[gate]'``."""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolkeeper.errors import ToolkeeperError

__all__ = ["error_rate_svg", "latency_svg", "require_matplotlib"]

_SIZE: Final = (6.4, 3.0)
_COLOURS: Final = {"candidate": "#c0392b", "baseline": "#2471a3"}
_METADATA: Final = {"Creator": None, "Date": None, "Format": None, "Type": None}
_BINS: Final = (10, 20)
"""The error-rate chart's number of equal time bins: one per ten samples, within these."""


def require_matplotlib() -> None:
    """ToolkeeperError ``gate.needs_matplotlib`` when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ToolkeeperError("the HTML report draws its charts with matplotlib: "
                              "pip install 'toolkeeper[gate]'",
                              code="gate.needs_matplotlib") from None


def number(value: Any) -> float | None:
    """``value`` as a finite float when it is a JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _observed(window: Any) -> Mapping[str, Any]:
    observed = window.get("observed") if isinstance(window, Mapping) else None
    return observed if isinstance(observed, Mapping) else {}


def _samples(window: Any) -> list[Mapping[str, Any]]:
    samples = _observed(window).get("samples")
    return [s for s in samples if isinstance(s, Mapping)] if isinstance(samples, list) else []


def _latencies(window: Any) -> list[float]:
    return sorted(v for v in (number(s.get("latencyMs")) for s in _samples(window))
                  if v is not None)


def _bucket_steps(window: Any) -> tuple[list[float], list[float]] | None:
    """A metrics window's CDF: 0 at 0 ms, then each finite bucket's share at its bound."""
    buckets = _observed(window).get("buckets")
    if not isinstance(buckets, list):
        return None
    bounds = sorted((le, count) for b in buckets if isinstance(b, Mapping)
                    for le, count in [(number(b.get("le")), number(b.get("count")))]
                    if count is not None and le is not None)
    infinite = [number(b.get("count")) for b in buckets
                if isinstance(b, Mapping) and b.get("le") == "+Inf"]
    total = max([c for c in infinite if c is not None] + [c for _, c in bounds], default=0.0)
    if not bounds or total <= 0:
        return None
    return [0.0] + [le for le, _ in bounds], [0.0] + [count / total for _, count in bounds]


def _svg(figure: Any, salt: str) -> str:
    """The figure's SVG element alone (no XML declaration or doctype), deterministic."""
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(figure)
    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"toolkeeper-{salt}", "svg.fonttype": "path"}):
        figure.savefig(out, format="svg", metadata=_METADATA)
    text = out.getvalue()
    return text[text.index("<svg"):].strip()


def _figure(title: str, xlabel: str, ylabel: str) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=_SIZE, layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title, fontsize=10)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    return figure, axes


def latency_svg(windows: Mapping[str, Any], limit: tuple[float, float] | None) -> str | None:
    """The latency CDF of ``windows`` (``candidate``, ``baseline``: W of the bundle or None)
    with ``limit`` (percentile, maxMs) drawn; None when neither has a latency to draw."""
    figure, axes = _figure("Latency distribution", "latency (ms)", "share of calls at or below")
    drawn = False
    for role, window in sorted(windows.items()):
        if role not in _COLOURS:
            continue
        latencies = _latencies(window)
        steps = None if latencies else _bucket_steps(window)
        if latencies:
            axes.ecdf(latencies, label=f"{role} ({len(latencies)} samples)",
                      color=_COLOURS[role])
            drawn = True
        elif steps is not None:
            axes.step(*steps, where="post", label=f"{role} (buckets)", color=_COLOURS[role])
            drawn = True
    if not drawn:
        return None
    if limit is not None:
        percentile, max_ms = limit
        axes.axvline(max_ms, color="#555555", linestyle="--",
                     label=f"limit: p{percentile:g} at most {max_ms:g} ms")
        axes.axhline(percentile / 100, color="#555555", linestyle=":", linewidth=0.8)
    axes.set_ylim(0, 1.02)
    axes.legend(loc="lower right", fontsize=8)
    return _svg(figure, "latency")


def _timed(window: Any, error_outcomes: frozenset[str] | None) -> list[tuple[float, bool]]:
    """``(atS, ok)`` of every sample that carries a time; an error is an outcome in the
    policy's ``errorOutcomes`` (default: every outcome but ``ok``)."""
    return [(at, outcome == "ok" if error_outcomes is None else outcome not in error_outcomes)
            for s in _samples(window)
            for at, outcome in [(number(s.get("atS")), s.get("outcome"))] if at is not None]


def _error_rates(timed: Sequence[tuple[float, bool]], edges: Sequence[float]
                 ) -> list[float]:
    """Each bin's share of errors (NaN: no samples), the last bin closed at its end."""
    totals, errors = [0] * (len(edges) - 1), [0] * (len(edges) - 1)
    width = edges[1] - edges[0]
    for at, ok in timed:
        if not edges[0] <= at <= edges[-1]:
            continue
        index = min(int((at - edges[0]) / width), len(totals) - 1)
        totals[index] += 1
        errors[index] += 0 if ok else 1
    return [e / t if t else math.nan for e, t in zip(errors, totals, strict=True)]


def error_rate_svg(windows: Mapping[str, Any], error_outcomes: frozenset[str] | None,
                   max_rate: float | None) -> str | None:
    """The error rate over time of ``windows``, in equal time bins across the windows' span,
    with ``max_rate`` drawn; None when the candidate's samples carry no ``atS``."""
    timed = {role: _timed(window, error_outcomes) for role, window in windows.items()
             if role in _COLOURS}
    if not timed.get("candidate"):
        return None
    spans = [(number(_observed(w).get("startS")), number(_observed(w).get("endS")))
             for w in windows.values() if w is not None]
    times = [at for series in timed.values() for at, _ in series]
    start = min([s for s, _ in spans if s is not None] + times)
    end = max([e for _, e in spans if e is not None] + times)
    if end <= start:
        end = start + 1.0
    bins = min(_BINS[1], max(_BINS[0], len(timed["candidate"]) // 10))
    edges = [start + (end - start) * i / bins for i in range(bins + 1)]
    middles = [(a - start + b - start) / 2 for a, b in itertools.pairwise(edges)]
    figure, axes = _figure("Error rate over time", "seconds from the window's start",
                           "share of calls in error")
    for role, series in sorted(timed.items()):
        if series:
            axes.plot(middles, _error_rates(series, edges), marker="o", markersize=3,
                      label=role, color=_COLOURS[role])
    if max_rate is not None:
        axes.axhline(max_rate, color="#555555", linestyle="--",
                     label=f"limit: at most {max_rate:g}")
    axes.set_xlim(0, end - start)
    axes.set_ylim(-0.02, 1.02)
    axes.legend(loc="upper right", fontsize=8)
    return _svg(figure, "errors")

