"""Smoke test of ``bench/gateway.py --quick --part a``: the in-process dispatch benchmark runs
to completion, checks its replies and its call log, and prints a positive rate (no timing is
asserted: the machine is shared)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gateway.py"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module, its folder on ``sys.path`` as when it runs (it imports its
    sibling ``gateway_floor``)."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("bench_gateway", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def test_the_quick_dispatch_benchmark_completes_and_prints_a_positive_rate_and_its_floor(
        bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--quick", "--part", "a"]) == 0
    out = capsys.readouterr().out
    match = re.search(r"^\(a\) median ([\d,]+) calls/s", out, re.MULTILINE)
    assert match is not None, out
    assert int(match.group(1).replace(",", "")) > 0
    assert re.search(r"^  run 2: ", out, re.MULTILINE), out
    floor = re.search(r"^\(a\) floor of the work .* median ([\d,]+) calls/s CPU; "
                      r"floor/toolkeeper ([\d.]+)x", out, re.MULTILINE)
    assert floor is not None, out
    assert int(floor.group(1).replace(",", "")) > 0 and float(floor.group(2)) > 0


def test_the_benchmark_request_is_a_valid_call_answered_with_the_demo_lookup(
        bench: ModuleType) -> None:
    stats = bench.bench_dispatch(calls=3, repeats=1)  # raises unless every reply checks out
    assert stats["median"] > 0
