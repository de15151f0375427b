"""What a forwarded call costs the gateway, counted by callgrind (issue 22, acceptance 8): the
instructions per call of four loops in one run, each one call at a time (so every row pays a
whole turn of the event loop per call, as at a modest load, and the count does not move with
the host's load or with how replies happen to batch):

* ``native``: the demo's ``payments.lookup`` answered by its handler in the gateway (the ASGI
  app of ``bench/gateway_servers.py toolkeeper``, in process);
* ``suspending``: the same, its handler awaiting one turn of the loop first: what any call
  that waits costs over one that completes at once (the watcher of its client, the resumption
  of its task);
* ``forwarded``: the same contract forwarded to the upstream (``gateway_servers.py
  forwarded``, in process): the gate, validation, call log, the upstream's health and timeout,
  the hop's ``_meta``, the result passed back;
* ``client``: toolkeeper's client alone in the session the forwarding opens
  (``upstreams.connections.open_session``): one HTTP round trip to the upstream.

The upstream is the official SDK's server (``gateway_servers.py sdk``), a process of its own
whose work is not counted. Each loop is one valgrind run, dumped at two marks around its calls
(``--dump-before=getppid``); the figure is the second part over the calls. The forwarded
call's floor is ``native + client``; ``suspending + client`` adds what waiting costs.

Run: ``python bench/forwarding_count.py`` (``--calls N``, default 300; ``--src DIR`` imports
toolkeeper from another checkout's ``src``, repeatable: each is counted in the same run).
Needs valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROWS = ("native", "suspending", "forwarded", "client")


def _suspending_app() -> Any:
    from toolkeeper.demo import install_demo
    from toolkeeper.demo.handlers import payments_lookup
    from toolkeeper.registry import Registry
    from toolkeeper.server import ToolContext, ToolHandlers, ToolResult, build_app
    from toolkeeper.transports.http import HttpConfig

    registry = Registry.open("memory:")
    install_demo(registry)
    handlers = ToolHandlers()

    async def lookup(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(0)
        return await payments_lookup(arguments, ctx)

    handlers.bind("payments.lookup", lookup)
    app, _ = build_app(registry, handlers, http=HttpConfig(json_response=True))
    return app


async def _loop(row: str, url: str, calls: int) -> None:
    os.environ["BENCH_UPSTREAM_URL"] = url
    if row == "client":
        from toolkeeper.upstreams import UpstreamDefinition
        from toolkeeper.upstreams.connections import open_session

        session = await open_session(UpstreamDefinition(name="sdk", url=url, era="modern"))

        async def call() -> None:
            reply = await session.call_tool("payments.lookup", {"reference": "PMT-771"})
            if reply.result is None or reply.result.get("isError"):
                raise AssertionError(f"the upstream did not answer: {reply}")
    else:
        import deployment
        import gateway_servers

        app = (_suspending_app() if row == "suspending"
               else gateway_servers.build("toolkeeper" if row == "native" else "forwarded"))
        stop = await deployment.start_lifespan(app)
        call = deployment.checked_call(app, b'"isError":false')
    for _ in range(20):  # warm: the session open, the views and routes cached
        await call()
    os.getppid()  # the mark: callgrind dumps its counts here
    for _ in range(calls):
        await call()
    os.getppid()
    if row == "client":
        await session.aclose()
    else:
        await stop()


def _count(row: str, url: str, calls: int, src: Path | None) -> float:
    from callgrind import marked_count

    return marked_count([__file__, "--child", row, url, str(calls)], calls, src)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=3, metavar=("ROW", "URL", "CALLS"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--src", type=Path, action="append",
                        help="import toolkeeper from this src directory (repeatable)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    if args.child:
        import uvloop

        uvloop.run(_loop(args.child[0], args.child[1], int(args.child[2])))
        return 0
    from gateway import start_server

    sources: list[Path | None] = list(args.src) if args.src else [None]
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        upstream = stack.enter_context(start_server("sdk", Path(folder)))
        for src in sources:
            counted = {row: _count(row, upstream.url, args.calls, src) for row in ROWS}
            where = f"  ({src})" if src is not None else ""
            for row in ROWS:
                print(f"{row:<11} {counted[row]:>12,.0f} instructions per call{where}",
                      flush=True)
            floor = counted["native"] + counted["client"]
            waiting = counted["suspending"] + counted["client"]
            print(f"forwarded / (native + client) = {counted['forwarded'] / floor:.3f}; "
                  f"forwarded / (suspending + client) = {counted['forwarded'] / waiting:.3f}; "
                  f"waiting costs {counted['suspending'] - counted['native']:,.0f}{where}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
