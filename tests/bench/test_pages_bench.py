"""Smoke test of ``bench/pages.py --quick``: the paged ``tools/list`` benchmark runs to
completion, checks the second page it measures, and prints every row and the ratio (no timing
is asserted: the machine is shared)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "pages.py"


def test_the_quick_paging_benchmark_prints_each_row_and_the_ratio(
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_pages", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for row in ("one page", "first page", "cached page", "write bytes", "serialize"):
        assert re.search(rf"^  {row} +[\d.]+ us$", out, re.MULTILINE), out
    assert re.search(r"^cached page / write bytes: [\d.]+x", out, re.MULTILINE), out


def test_each_callgrind_page_loop_names_a_request_of_the_paging_benchmark(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("bench_callgrind", SCRIPT.parent / "callgrind.py")
    assert spec is not None and spec.loader is not None
    callgrind = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(callgrind)
    import pages

    requests, _ = pages.requests(300, 100)
    assert set(callgrind.PAGE_LOOPS.values()) <= set(requests)
    for label in callgrind.PAGE_LOOPS.values():
        requests[label]()  # each checks its reply, or raises
