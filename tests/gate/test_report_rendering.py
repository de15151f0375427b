"""The HTML report's page: evidence text is escaped wherever it shows, the page loads nothing
from anywhere, the same inputs give the same bytes (in another process too), a metrics window
is drawn from its buckets, the matrix's cells are a table, and content of any other shape
renders without raising."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from report_kit import DECISION, HOSTILE, decision_for, evidence, make_bundle, matrix

from toolkeeper.gate.evidence import SECTIONS, bundle
from toolkeeper.gate.report import render

HERE = Path(__file__).resolve().parent


def _count(page: str, tag: str) -> int:
    return len(re.findall(rf"<{tag}[\s>]", page, flags=re.IGNORECASE))


def test_markup_in_evidence_is_escaped_text() -> None:
    made = make_bundle(hostile=True)
    page = render(made, {**decision_for(made), "reasons": [
        {"rule": HOSTILE, "status": HOSTILE, "section": "transcripts", "measured": HOSTILE,
         "threshold": None, "detail": HOSTILE}]}, {"cells": [{HOSTILE: HOSTILE}]})
    assert _count(page, "script") == 0 and _count(page, "img") == 0
    assert HOSTILE not in page
    escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
    for section in ("transcripts", "proxyEvidence", "matrix", "decision"):
        start = page.index(f'id="{section}"')
        assert escaped in page[start:page.index("</section>" if section != "decision"
                                                else "</header>", start)], section
    assert '<td class="status other">' in page  # a hostile status picks no class of its own


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = render(make_bundle(), DECISION, matrix())
    assert _count(page, "script") == 0 and _count(page, "link") == 0
    assert _count(page, "img") == 0 and _count(page, "iframe") == 0
    # an SVG's glyphs and clip paths are its own (#id): nothing else is referred to
    assert not re.search(r"\b(src|href)\s*=\s*[\"']?[^\"'#\s>]", page, re.IGNORECASE)
    assert not re.search(r"url\((?!#)", page) and "@import" not in page
    assert "default-src 'none'" in page


def test_the_same_inputs_give_the_same_bytes_in_another_process() -> None:
    page = render(make_bundle(), DECISION, matrix())
    assert render(copy.deepcopy(make_bundle()), copy.deepcopy(DECISION), matrix()) == page
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import report_kit as k; "
              "from toolkeeper.gate.report import render; "
              "sys.stdout.write(render(k.make_bundle(), k.DECISION, k.matrix()))")
    there = subprocess.run([sys.executable, "-c", script, str(HERE)], capture_output=True,
                           text=True, check=True, timeout=120,
                           env={**os.environ, "PYTHONHASHSEED": "7"})
    assert there.stdout == page


def test_the_decision_its_reasons_counts_and_digests_are_shown() -> None:
    made = make_bundle()
    page = render(made, DECISION, None)
    assert '<h1 class="failed">Decision: rollback</h1>' in page
    assert made["digest"] in page and "not the bundle" not in page
    for kept in made["sections"].values():
        assert page.count(kept["digest"]) == 2  # the decision's table and the section's panel
    assert page.count('<td class="status failed">failed</td>') >= 2
    assert 'id="matrix"' not in page
    other = render(made, {**DECISION, "evidenceDigest": "sha256:" + "0" * 64}, None)
    assert "not the bundle" in other


def test_the_rollback_panel_shows_the_signer_and_algorithm_never_the_signature() -> None:
    made = make_bundle()
    page = render(made, DECISION, None)
    attestation = made["sections"]["rollbackEvidence"]["content"]["attestation"]
    assert attestation["signer"] in page and attestation["algorithm"] in page
    proofs = [v for k, v in attestation.items() if k not in ("signer", "algorithm")]
    assert proofs and all(proof not in page for proof in proofs)


def test_a_metrics_window_is_drawn_from_its_cumulative_buckets() -> None:
    sections = evidence()
    sections["healthWindows"] = {"baseline": None, "candidate": {
        "tool": "t", "version": "2.0.0", "source": "metrics",
        "observed": {"startS": 0, "endS": 60, "outcomes": {"ok": 90, "error": 10},
                     "buckets": [{"le": 50, "count": 40}, {"le": 100, "count": 90},
                                 {"le": 500, "count": 99}, {"le": "+Inf", "count": 100}]},
        "result": {"status": "healthy", "samples": 100, "errors": 10, "verdicts": []}}}
    page = render(bundle(sections), DECISION, None)
    panel = page[page.index('id="healthWindows"'):page.index('id="rollbackEvidence"')]
    assert _count(panel, "svg") == 1  # the latency CDF; no atS, so no error rate over time
    assert "<!-- candidate (buckets) -->" in panel  # the legend (drawn as paths, named)
    assert "absent" in panel  # the baseline row


def test_the_matrix_cells_are_one_row_each_with_its_summary_and_decision() -> None:
    made = matrix()
    page = render(make_bundle(), DECISION, made)
    section = page[page.index('id="matrix"'):]
    assert made["digest"] in section and "Release decision beside it: rollback" in section
    cell = made["cells"][0]
    assert "<td>toolkeeper 0.1.0</td>" in section  # the client, as its name and version
    assert f"<td>{cell['required']['passed']}/{cell['required']['total']}</td>" in section
    assert section.count("<tr>") == 2 + 1 + len(made["cells"])  # the summary, the cells


def test_a_matrix_of_another_shape_is_a_table_with_a_column_per_key() -> None:
    page = render(make_bundle(), DECISION, {"cells": [
        {"sdk": "python", "status": "passed"}, {"era": "2025-06-18", "status": "failed"}, 7]})
    section = page[page.index('id="matrix"'):]
    assert "<th>era</th><th>sdk</th><th>status</th>" in section
    assert section.count("<tr>") == 1 + 2
    assert '<td class="status other">failed</td>' not in section


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                    allow_infinity=False) | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["runs", "reports", "candidate",
                                                       "baseline", "observed", "samples",
                                                       "latencyMs", "atS", "cells", "window",
                                                       "le", "count", "buckets", "x"]),
                                      inner, max_size=4), max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SECTIONS), JSON, JSON)
def test_content_of_any_shape_renders_without_raising(name: str, content: Any,
                                                      matrix_value: Any) -> None:
    made = bundle({**evidence(), name: content})
    shown_matrix = matrix_value if isinstance(matrix_value, dict) else None
    page = render(made, {**DECISION, "evidenceDigest": made["digest"]}, shown_matrix)
    assert page.startswith("<!DOCTYPE html>") and "Decision: rollback" in page
    json.dumps(page)
