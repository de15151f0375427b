"""Smoke test of ``bench/client_kernel.py --wall``: both loops (the official SDK client's call
and the kernel's own work) run to completion and the ratio line is printed (no timing is
asserted: the machine is shared)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kernel_live_kit import ENV

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "client_kernel.py"


def test_the_wall_clock_kernel_benchmark_completes_and_prints_its_ratio() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--wall", "--large", "5"],
                          capture_output=True, timeout=120, check=False, env=ENV)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    for loop in ("sdk", "kernel"):
        assert re.search(rf"^{loop} +[\d,.]+ us per call$", out, re.MULTILINE), out
    assert re.search(r"^kernel / sdk = \d+\.\d{3} \(target <= 0\.10\)$", out, re.MULTILINE), out
