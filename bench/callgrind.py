"""Instructions per call on the measured path, counted by callgrind (repeatable, unlike seconds).

Two loops, each run under ``valgrind --tool=callgrind`` twice (``--small`` and ``--large``
iterations, default 1,000 and 3,000) with ``PYTHONHASHSEED=0``; the difference of the two totals
divided by the difference of the counts is the cost of one iteration, with start-up and warm-up
cancelled out:

* ``dispatch``: part (a) of ``bench/gateway.py``: ``kernel.handle_asgi`` of one valid modern
  ``tools/call`` of ``payments.lookup``, its Pending completed and the reply encoded;
* ``floor``: the same call through ``bench/gateway_floor.py`` (the least work that gives the
  same answer), for the ratio.

Run: ``python bench/callgrind.py`` (needs valgrind; Debian package ``valgrind``). With
``--src DIR`` the loops import toolkeeper from ``DIR`` (another checkout's ``src``), so two
commits can be compared in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LOOPS = ("dispatch", "floor")
_COLLECTED = re.compile(rb"Collected\s*:\s*(\d+)")


def _child(loop: str, calls: int) -> None:
    """Run ``calls`` iterations of one loop after one warm-up call (inside valgrind)."""
    sys.path.insert(0, str(HERE))
    import gateway  # the bench modules sit beside this script
    from gateway_floor import CountingCallLog, Floor, bench_floor

    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.protocol.methods import TransportFacts
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_app

    registry = Registry.open("memory:")
    install_demo(registry)
    handlers = demo_handlers()
    _, gw = build_app(registry, handlers, call_log=CountingCallLog())
    first: Any = asyncio.run(gateway._dispatch_loop(gw.kernel, 1))
    if loop == "dispatch":
        asyncio.run(gateway._dispatch_loop(gw.kernel, calls))
        return
    floor = Floor(registry, handlers, gw.resolve_principal(TransportFacts("http", None)),
                  CountingCallLog())
    bench_floor(floor, gateway.BODY, gateway.asgi_pairs(), first[3].body, calls)


def _count(loop: str, calls: int, src: Path | None) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0")
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
             sys.executable, __file__, "--child", loop, str(calls)],
            env=env, capture_output=True, timeout=1800, check=False)
    found = _COLLECTED.search(run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed ({loop}, {calls}): "
                         f"{run.stderr.decode(errors='replace')[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=2, metavar=("LOOP", "CALLS"), help=argparse.SUPPRESS)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=3000)
    parser.add_argument("--loop", choices=LOOPS, action="append")
    parser.add_argument("--src", type=Path, help="import toolkeeper from this src directory")
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    results: dict[str, float] = {}
    for loop in args.loop or LOOPS:
        small = _count(loop, args.small, args.src)
        large = _count(loop, args.large, args.src)
        results[loop] = (large - small) / (args.large - args.small)
        print(f"{loop:<9} {results[loop]:>10,.0f} instructions per call", flush=True)
    if "dispatch" in results and "floor" in results:
        print(f"dispatch / floor {results['dispatch'] / results['floor']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
