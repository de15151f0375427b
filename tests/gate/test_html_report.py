"""The HTML report opened in headless Chromium (Debian's package, driven by Playwright at its
binary): it loads with no console error and no request beyond the file itself, shows the
decision, draws the health windows as SVG charts, renders hostile evidence as text (no script
runs, no dialog opens) and screenshots to a non-empty PNG; a rollout's page (its decisions by
the gate, rollout_report_kit) opens the same way. A missing Chromium is a failure under CI
(``.ci/run`` installs it) and a skip elsewhere."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_kit import DECISION, HOSTILE, decision_for, make_bundle, matrix
from rollout_report_kit import HOSTILE as HOSTILE_DIGEST
from rollout_report_kit import KEY, rollout_with_decisions

from toolkeeper.gate.report import render
from toolkeeper.gate.report_rollout import render_rollout
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book

_DEBIAN_CHROMIUM = "/usr/bin/chromium"


def _missing(what: str, hint: str) -> None:
    """``pytest.fail`` under CI (``.ci/run`` installs it), ``pytest.skip`` elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required under CI ({hint})")
    pytest.skip(f"{what} is not installed ({hint})")


def _chromium() -> str:
    found = shutil.which("chromium") or (
        _DEBIAN_CHROMIUM if os.access(_DEBIAN_CHROMIUM, os.X_OK) else None)
    if found is None:
        _missing("chromium", "apt-get install chromium; .ci/run installs it")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    binary = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright", "pip install -e '.[dev]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=binary, headless=True)
        try:
            yield launched
        finally:
            launched.close()


class Opened:
    """A report opened in a fresh page, with what the page said and asked for."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(path.as_uri(), wait_until="load")


def _open(browser: Any, tmp_path: Path, page_html: str) -> Opened:
    path = tmp_path / "report.html"
    path.write_text(page_html, encoding="utf-8")
    opened = Opened(browser, path)
    assert opened.requests == [path.as_uri()]  # nothing but the file: it opens offline
    return opened


def test_the_report_opens_with_no_console_errors_shows_the_decision_and_draws_the_windows(
        browser: Any, tmp_path: Path) -> None:
    opened = _open(browser, tmp_path, render(make_bundle(), DECISION, matrix()))
    page = opened.page
    try:
        assert opened.errors == []
        assert page.locator("h1").inner_text() == "Decision: rollback"
        assert page.locator("#healthWindows svg").count() == 2  # latency CDF, error rate
        for section in ("transcripts", "sdkDiffs", "proxyEvidence", "healthWindows",
                        "rollbackEvidence", "policy", "matrix"):
            assert page.locator(f"section#{section}").count() == 1, section
        assert page.locator("#healthWindows svg").first.bounding_box()["width"] > 200
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        opened.context.close()


def test_hostile_evidence_shows_as_text_and_runs_nothing(browser: Any, tmp_path: Path) -> None:
    made = make_bundle(hostile=True)
    opened = _open(browser, tmp_path, render(made, decision_for(made), None))
    try:
        assert opened.errors == [] and opened.dialogs == []
        assert opened.page.locator("body script, body img").count() == 0
        assert HOSTILE in opened.page.locator("#transcripts").inner_text()
        assert HOSTILE in opened.page.locator("#proxyEvidence").inner_text()
    finally:
        opened.context.close()


def test_a_rollouts_page_opens_with_no_console_errors_and_shows_its_decisions(
        browser: Any, tmp_path: Path) -> None:
    with Registry.open(rollout_with_decisions(tmp_path), create=False) as registry:
        book = rollout_book(registry)
        rollout = book.get("pay")
        assert rollout is not None
        made = render_rollout(rollout, book.decisions(rollout), {KEY.key_id: KEY.trusted()})
    opened = _open(browser, tmp_path, made)
    page = opened.page
    try:
        assert opened.errors == [] and opened.dialogs == []
        assert page.locator("h1").inner_text() == "Rollout: rolled_back \u2014 pay 2.0.0"
        assert page.locator("#decisions tbody tr").count() == 2
        assert page.locator("#decisions td.status").all_inner_texts() == ["promote", "rollback"]
        assert page.locator("#last-decision #health").count() == 1
        assert page.locator("body script, body img").count() == 0
        assert HOSTILE_DIGEST in page.locator("#rollout").inner_text()  # shown as text
    finally:
        opened.context.close()
