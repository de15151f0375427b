"""Targets for the conformance tests: toolkeeper's demo gateway in process, over HTTP on an
ephemeral 127.0.0.1 port, and over stdio; a runner that returns the report synchronously."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from toolkeeper.client import Target
from toolkeeper.conformance import Report, RunOptions, Transcript, builtin_corpus, run_transcripts
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.transports import serve_in_thread

__all__ = ["STDIO_COMMAND", "demo_app", "outcomes", "run", "served_url"]

STDIO_COMMAND = (sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio",
                 "--registry", "memory:")


def demo_app() -> Any:
    registry = Registry.open("memory:")
    install_demo(registry)
    app, _ = build_app(registry, demo_handlers())
    return app


@contextmanager
def served_url(app: Any) -> Iterator[str]:
    with serve_in_thread(app) as running:
        yield running.url


def run(target: Target, transcripts: Sequence[Transcript] | None = None,
        options: RunOptions | None = None) -> Report:
    corpus = builtin_corpus() if transcripts is None else list(transcripts)
    return asyncio.run(run_transcripts(target, corpus, options))


def outcomes(report: Report) -> dict[str, str]:
    return {case.name: case.outcome for case in report.cases}
