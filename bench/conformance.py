"""Conformance corpus run time (issue 16, acceptance 7): the whole built-in transcript corpus
against toolkeeper's demo gateway in process (ASGI twin, no socket), timed end to end: era
selection, tools/list, every case replayed and judged, the report built. Target: under 10 s.

Each round builds a fresh gateway (memory registry, demo estate) outside the timing, then
times ``run_transcripts``; every round must pass every case. Prints the median and the worst
round.

Run: ``python bench/conformance.py`` (``--rounds N``, default 5).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from toolkeeper.client import Target
from toolkeeper.conformance import builtin_corpus, run_transcripts
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import build_app

TARGET_S = 10.0


def _target() -> Target:
    registry = Registry.open("memory:")
    install_demo(registry)
    app, _ = build_app(registry, demo_handlers())
    return Target.from_asgi(app)


def _round() -> tuple[float, int]:
    corpus = builtin_corpus()
    target = _target()
    started = time.perf_counter()
    report = asyncio.run(run_transcripts(target, corpus))
    elapsed = time.perf_counter() - started
    if report.failed or report.skipped > 1:  # the -32021 case needs --capability-tool
        raise SystemExit(f"the corpus did not pass: {report.failed} failed, "
                         f"{report.skipped} skipped")
    return elapsed, len(report.cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    times: list[float] = []
    cases = 0
    for _ in range(rounds):
        elapsed, cases = _round()
        times.append(elapsed)
    median, worst = statistics.median(times), max(times)
    print(f"{cases} cases in process: median {median:.3f} s, worst {worst:.3f} s "
          f"over {rounds} rounds (target < {TARGET_S:.0f} s)")
    if worst >= TARGET_S:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
