"""The official conformance suite's tools-level scenarios pass through ``toolkeeper serve``
fronting the SDK fixture server as an upstream wherever they pass against the fixture directly,
but for the entries of ``conformance/upstream-expected-failures.yml`` (each with its reason):
``conformance/upstream_suite.py`` run as the docs show it (docs/upstreams.md), its JSON read.
Without the suite installed (``conformance/setup.sh``; CI installs it) the live test is skipped."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from process_kit import SRC

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "conformance" / "upstream_suite.py"
RUN_TIMEOUT_S = 400


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("upstream_suite", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_baseline_entry_names_its_run_era_and_reason(tmp_path: Path) -> None:
    suite = _script()
    baseline = suite.read_baseline()
    assert baseline and set(baseline) <= set(suite.HOPS)
    for label, eras in baseline.items():
        for era, entries in eras.items():
            assert era in suite.RUNS[label]
            assert entries and all(reason.strip() for reason in entries.values())
    bare = tmp_path / "bare.yml"
    bare.write_text('hop-auto:\n  "2026-07-28":\n    tools-list:\n', encoding="utf-8")
    with pytest.raises(ValueError, match="tools-list: no reason"):
        suite.read_baseline(bare)
    direct = tmp_path / "direct.yml"
    direct.write_text('direct:\n  "2026-07-28":\n    tools-list: why\n', encoding="utf-8")
    with pytest.raises(ValueError, match="'direct' is not a gateway run"):
        suite.read_baseline(direct)


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_the_tools_scenarios_pass_through_the_gateway_as_directly(tmp_path: Path) -> None:
    suite = _script()
    try:
        suite.suite_paths()
    except suite.Unavailable as exc:
        pytest.skip(str(exc))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(SCRIPT), "--json", "--out", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          check=False, cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert (report["unexpected"], report["stale"]) == ([], []), report
    assert done.returncode == 0
    runs, baseline = report["runs"], suite.read_baseline()
    assert sorted(runs) == ["direct", "hop-auto", "hop-legacy"]
    for era, results in runs["direct"].items():
        assert {"tools-list", "tools-call-simple-text", "tools-call-error",
                "tools-call-with-progress", "json-schema-2020-12"} <= set(results), era
        assert set(results.values()) == {"pass"}, era
    for label in ("hop-auto", "hop-legacy"):
        for era, results in runs[label].items():
            assert set(results) == set(runs["direct"][era]), (label, era)
            expected = set(baseline.get(label, {}).get(era, {}))
            assert {s for s, o in results.items() if o == "pass"} == set(results) - expected
