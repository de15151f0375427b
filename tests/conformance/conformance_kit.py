"""Targets for the conformance tests: toolkeeper's demo gateway in process, over HTTP on an
ephemeral 127.0.0.1 port, and over stdio; a runner that returns the report synchronously."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolkeeper.client import Target
from toolkeeper.conformance import (
    Report,
    RunOptions,
    Transcript,
    builtin_corpus,
    canonical_text,
    run_transcripts,
)
from toolkeeper.conformance.replay import CAPABILITY_TOOL_REASON
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.transports import serve_in_thread

__all__ = ["CAPABILITY_TOOL", "PANEL", "STDIO_COMMAND", "UNADVERTISED", "check_panel",
           "demo_app", "expected_skips", "outcomes", "panel_rows", "run", "served_url"]

STDIO_COMMAND = (sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio",
                 "--registry", "memory:")


CAPABILITY_TOOL = "conformance.elicit"


def demo_app(*, with_capability_tool: bool = False) -> Any:
    """The demo gateway; optionally with :data:`CAPABILITY_TOOL`, which refuses callers that
    do not declare the elicitation capability."""
    registry = Registry.open("memory:")
    install_demo(registry)
    handlers = demo_handlers()
    if with_capability_tool:
        registry.publish(spec_from_mapping({
            "name": CAPABILITY_TOOL, "version": "1.0.0", "title": "Ask the user",
            "description": "Needs the client's elicitation capability.",
            "inputSchema": {"type": "object", "properties": {}},
            "dataClassification": "internal", "sideEffect": "read"}))
        handlers.bind(CAPABILITY_TOOL, lambda arguments: "asked",
                      requires={"elicitation": {}})
    app, _ = build_app(registry, handlers)
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


UNADVERTISED = {name: f"needs a capability the target did not advertise (one of {what})"
                for name, what in (("golden-legacy-prompts-list", "prompts"),
                                   ("golden-legacy-resources-list", "resources"),
                                   ("golden-modern-prompts-list", "prompts"),
                                   ("golden-modern-resources-list", "resources"))}
"""The demo estate has tools only: the prompt and resource cases are skipped with the reason."""


def expected_skips(stdio: bool) -> dict[str, str]:
    transport = "stdio" if stdio else "http"
    elsewhere = {t.name: "not defined on this transport" for t in builtin_corpus()
                 if t.mode == "live" and transport not in t.transports}
    return {**elsewhere, **UNADVERTISED,
            "negative-missing-required-capability": CAPABILITY_TOOL_REASON}


PANEL = Path(__file__).resolve().parent / "panel"
"""The panel's expected outcomes: one canonical JSON file per target and transport, a row per
live case (its outcome, level and spec citation; the finding's code when it did not pass, the
reason when it was skipped)."""


def panel_rows(report: Report) -> dict[str, dict[str, Any]]:
    """The live rows of ``report`` in the panel files' form."""
    rows: dict[str, dict[str, Any]] = {}
    for case in report.cases:
        if case.mode != "live":
            continue
        row: dict[str, Any] = {"outcome": case.outcome, "level": case.level,
                               "citation": case.citation}
        if case.outcome in ("fail", "warn", "note") and case.finding:
            row["finding"] = case.finding.split(":", 1)[0]
        elif case.outcome == "skip":
            row["reason"] = case.finding
        rows[case.name] = row
    return rows


def check_panel(report: Report, target: str) -> None:
    """``report``'s live outcomes are the ones checked in for ``target``
    (``tests/conformance/panel/<target>.json``); ``TOOLKEEPER_PANEL_WRITE=1`` writes the file
    instead (review its diff)."""
    path = PANEL / f"{target}.json"
    rows = panel_rows(report)
    if os.environ.get("TOOLKEEPER_PANEL_WRITE") == "1":
        PANEL.mkdir(exist_ok=True)
        path.write_text(canonical_text({"target": target, "cases": rows}), encoding="utf-8")
    expected = json.loads(path.read_text("utf-8"))["cases"]
    assert rows == expected, sorted(
        (name, rows.get(name), expected.get(name))
        for name in set(rows) | set(expected) if rows.get(name) != expected.get(name))
