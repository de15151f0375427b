"""Smoke test of ``bench/forwarding_count.py``: each of its loops (the native call, the native
call that waits, the forwarded call, the client alone) answers the demo's lookup, every answer
checked by the loop itself, against the official SDK's server as the upstream (the counting
under valgrind is left to the bench)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def upstream_url(tmp_path_factory: pytest.TempPathFactory) -> object:
    sys.path.insert(0, str(BENCH))
    try:
        from gateway import start_server
    finally:
        sys.path.remove(str(BENCH))
    with start_server("sdk", tmp_path_factory.mktemp("upstream")) as server:
        yield server.url


@pytest.mark.parametrize("row", ["native", "suspending", "forwarded", "client"])
def test_each_counted_loop_answers_the_lookup(row: str, upstream_url: str) -> None:
    run = subprocess.run([sys.executable, str(BENCH / "forwarding_count.py"), "--child", row,
                          upstream_url, "3"], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr[-2000:]
