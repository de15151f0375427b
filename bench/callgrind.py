"""Instructions per call on the measured path, counted by callgrind (repeatable, unlike seconds).

Two loops, each run under ``valgrind --tool=callgrind`` twice (``--small`` and ``--large``
iterations, default 1,000 and 3,000) with ``PYTHONHASHSEED=0``; the difference of the two totals
divided by the difference of the counts is the cost of one iteration, with start-up and warm-up
cancelled out:

* ``dispatch``: part (a) of ``bench/gateway.py``: ``kernel.handle_asgi`` of one valid modern
  ``tools/call`` of ``payments.lookup``, its Pending completed and the reply encoded;
* ``floor``: the same call through ``bench/gateway_floor.py`` (the least work that gives the
  same answer), for the ratio;
* ``observed``: ``dispatch`` with the gateway's observability on: the durable call log on a
  temporary SQLite file (the registry stays in memory) and Prometheus metrics on a free
  loopback port (the flusher
  thread's work, its SQLite writes included, is counted too: callgrind counts every thread);
* ``observed-path``: ``observed`` with the flusher parked (a one-hour interval, never a full
  batch), so only the call's own path is counted;
* ``sync-inline`` and ``sync-thread``: ``dispatch`` with ``payments.lookup`` bound to one
  plain ``def`` handler (no context, the same answer without progress or log lines), bound
  ``inline=True`` (run inside dispatch, on the event loop) and by default (run in a worker
  thread): their difference is the cost of the thread hop;
* ``rollout``: ``dispatch`` while ``payments.lookup`` 1.1.0 (1.0.0's contract) is rolled out
  over 1.0.0 at a 50 % step (``RolloutBook.start``; needs a source that has it): the routing's
  cost with a rollout in play;
* ``jwt`` and ``key``: ``dispatch`` with ``Authorization: Bearer`` on every request, through
  the resolver ``build_resolver`` makes: an RS256 JWT (PEM key) or an API key, each already
  verified and cached, for a principal with the anonymous one's entitlement (the ratio to
  ``dispatch`` is printed; the target is at most 1.10).

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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LOOPS = ("dispatch", "floor", "observed", "observed-path", "jwt", "key", "observed-jwt",
         "observed-key", "sync-inline", "sync-thread")
ASGI_LOOPS = tuple(f"asgi-{config}{'' if era == 'modern' else '-legacy'}"
                   for era in ("modern", "legacy")
                   for config in ("anonymous", "demo", "deploy", "deploy-jwt"))
"""The deployment loops (``--asgi``): one request through the ASGI app ``serve`` builds for
each configuration of ``bench/deployment.py``, in each era (legacy: one open session)."""
SDK_LOOP = "asgi-sdk"
"""The same modern request through the official SDK's ASGI app (``bench/gateway_servers.py
sdk``: ``MCPServer``, stateless, JSON responses), its lifespan started: the baseline of the
``asgi-*`` loops, counted like them (``--loop asgi-sdk``; ``--asgi`` includes it)."""
PAGE_LOOPS = {"page-one": "one page", "page-first": "first page", "page-cached": "cached page",
              "page-write": "write bytes"}
"""The ``bench/pages.py`` rows counted by ``--pages``."""
_COLLECTED = re.compile(rb"Collected\s*:\s*(\d+)")


def _child(loop: str, calls: int) -> None:
    """Run ``calls`` iterations of one loop after one warm-up call (inside valgrind)."""
    sys.path.insert(0, str(HERE))
    if loop in PAGE_LOOPS:
        import pages

        request = pages.requests(10_000, 100)[0][PAGE_LOOPS[loop]]
        for _ in range(calls + 1):  # one warm-up, as the other loops
            request()
        return
    if loop in ASGI_LOOPS:
        _asgi(loop, calls)
        return
    if loop == SDK_LOOP:
        _asgi_sdk(calls)
        return
    import gateway  # the bench modules sit beside this script
    from gateway_floor import CountingCallLog, Floor, bench_floor

    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.protocol.methods import TransportFacts
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_app

    registry = Registry.open("memory:")
    install_demo(registry)
    handlers = demo_handlers()
    if loop in ("observed", "observed-path"):
        _observed(loop, calls, handlers)
        return
    if loop in ("jwt", "key", "observed-jwt", "observed-key"):
        _credential(loop, calls, registry, handlers)
        return
    if loop in ("sync-inline", "sync-thread"):
        handlers = _sync_handlers(inline=loop == "sync-inline")
    if loop == "rollout":
        _rollout(registry)
        loop = "dispatch"
    _, gw = build_app(registry, handlers, call_log=CountingCallLog())
    first: Any = asyncio.run(gateway._dispatch_loop(gw.kernel, 1))
    if loop in ("sync-inline", "sync-thread"):
        asyncio.run(gateway._dispatch_loop(gw.kernel, calls))
        return
    if loop == "dispatch":
        asyncio.run(gateway._dispatch_loop(gw.kernel, calls))
        return
    floor = Floor(registry, handlers, gw.resolve_principal(TransportFacts("http", None)),
                  CountingCallLog())
    bench_floor(floor, gateway.BODY, gateway.asgi_pairs(), first[3].body, calls)


def _rollout(registry: Any) -> None:
    """``payments.lookup`` 1.1.0 (1.0.0's contract) rolled out over 1.0.0 at a 50 % step."""
    import time

    from toolkeeper.contracts.semver import Version
    from toolkeeper.contracts.spec import spec_from_mapping, spec_to_mapping
    from toolkeeper.registry.rollout_book import rollout_book
    from toolkeeper.registry.rollouts import Rollout

    spec = registry.get("payments.lookup", "1.0.0")
    registry.publish(spec_from_mapping({**spec_to_mapping(spec, lifecycle=False),
                                        "version": "1.1.0"}))
    now = time.time_ns() // 1000
    rollout_book(registry).start(Rollout(
        "payments.lookup", Version.parse("1.1.0"), Version.parse("1.0.0"), (50, 100), 0,
        "running", "00" * 16, {}, 300, 3, {}, now, now, now))


def _sync_handlers(*, inline: bool) -> Any:
    """``payments.lookup`` as one plain ``def`` (no context), inline or threaded."""
    from toolkeeper.server import ToolHandlers, ToolResult, text

    def lookup(arguments: dict[str, Any]) -> ToolResult:
        reference = arguments["reference"]
        line = f"{reference}: HELD, 250000 AED, beneficiary ACME TRADING LLC"
        return ToolResult((text(line),), {
            "reference": reference, "status": "HELD", "amount": 250000, "currency": "AED",
            "beneficiary": "ACME TRADING LLC"})

    handlers = ToolHandlers()
    handlers.bind("payments.lookup", lookup, inline=inline)
    return handlers


def _observability(tmp: str, registry: Any, parked: bool = False) -> Any:
    """``build_observability`` as ``serve`` makes it: the durable call log on a SQLite file in
    ``tmp`` (the registry stays in memory, as in ``dispatch``) and metrics on a free port."""
    import socket

    from toolkeeper.observability import CallLogSettings, MetricsSettings, build_observability
    from toolkeeper.registry import Registry

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"sqlite://{tmp}/calls.db"
    Registry.open(url).close()
    return build_observability(
        CallLogSettings(flush_interval_ms=3_600_000 if parked else 200,
                        max_batch=10**9 if parked else 1000),
        MetricsSettings(port=port), registry=registry, registry_url=url)


def _observed(loop: str, calls: int, handlers: Any) -> None:
    """The ``dispatch`` loop through a gateway built with ``build_observability``."""
    import gateway

    from toolkeeper.demo import install_demo
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_app

    parked = loop == "observed-path"
    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry.open("memory:")
        install_demo(registry)
        obs = _observability(tmp, registry, parked)
        _, gw = build_app(registry, handlers, call_log=obs.call_log)
        asyncio.run(gateway._dispatch_loop(gw.kernel, 1))
        asyncio.run(gateway._dispatch_loop(gw.kernel, calls))
        if parked:  # the rows queued are never written: the flush is not the path
            os._exit(0)
        obs.stop()
        registry.close()


def _credential(loop: str, calls: int, registry: Any, handlers: Any) -> None:
    """The ``dispatch`` loop with a bearer credential the resolver has cached (``observed-*``:
    and the durable call log and metrics of ``observed``)."""
    from types import SimpleNamespace

    import gateway
    from cryptography.hazmat.primitives import serialization
    from gateway_floor import CountingCallLog

    from toolkeeper.auth import build_resolver
    from toolkeeper.auth.keys import issue_key
    from toolkeeper.registry.apikeys import key_store
    from toolkeeper.server import build_app

    resource = "http://127.0.0.1:8000/mcp"
    scopes = sorted(registry.required_scopes())
    with tempfile.TemporaryDirectory() as tmp:
        observed = loop.startswith("observed-")
        loop = loop.removeprefix("observed-")
        issuers = []
        if loop == "jwt":
            import time

            import jwt
            private = _bench_rsa_key()
            pem = Path(tmp) / "key.pem"
            pem.write_bytes(private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
            issuers.append(SimpleNamespace(
                issuer="https://idp.bench", audience="", algorithms=("RS256",),
                secret_file="", public_key_file=str(pem), jwks_file="", jwks_url="",
                jwks_refresh_s=300, leeway_s=30, tenant_claim="tenant", scopes_claim="scope",
                clearance_claim="clearance"))
            token = jwt.encode({"iss": "https://idp.bench", "aud": resource, "sub": "bench",
                                "tenant": "local", "scope": " ".join(scopes),
                                "clearance": "restricted", "exp": int(time.time()) + 86400},
                               private, algorithm="RS256")
        else:
            token = issue_key(key_store(registry.store), tenant="local",
                              scopes=scopes, clearance="restricted").token
        auth = SimpleNamespace(methods=(loop + "s" if loop == "key" else loop,),
                               resource=resource, authorization_servers=(),
                               scopes_supported=(), stdio=None, jwt_issuers=tuple(issuers))
        obs = _observability(tmp, registry) if observed else None
        _, gw = build_app(registry, handlers,
                          call_log=CountingCallLog() if obs is None else obs.call_log,
                          resolve_principal=build_resolver(auth, registry))
        pairs = [*gateway.asgi_pairs(), (b"authorization", f"Bearer {token}".encode())]
        gateway.asgi_pairs = lambda: pairs  # the loop reads its headers from here
        asyncio.run(gateway._dispatch_loop(gw.kernel, 1))
        asyncio.run(gateway._dispatch_loop(gw.kernel, calls))
        if obs is not None:
            obs.stop()


def _asgi(loop: str, calls: int) -> None:
    """``calls`` requests (after one warm-up) through the ASGI app of one configuration of
    ``bench/deployment.py``: every status checked, the first and last reply decoded and
    checked; the flusher and metrics threads run, their work counted. The call log's flusher
    wakes by count only (``calllog.flush_interval_ms`` 60,000, its most: a batch every
    ``calllog.max_batch`` = 1,000 calls), as over HTTP at a few thousand calls per second,
    where its 200 ms hold about that many; under valgrind's slowness 200 ms would hold a few
    calls and make every batch's fixed cost look per call. The rows still queued are written
    before the loop's end mark, so every call's row is counted."""
    import deployment

    name = loop.removeprefix("asgi-")
    era = "legacy" if name.endswith("-legacy") else "modern"
    name = name.removesuffix("-legacy")
    with tempfile.TemporaryDirectory() as tmp:
        built = deployment.assemble(name, Path(tmp), flush_interval_ms=60_000)
        exchange = deployment.exchanger(built.app)
        recorder = built.features.observability.call_log
        body = deployment.call_body(era)

        async def run() -> None:
            session = (await deployment.legacy_session_asgi(built.app, built.token)
                       if era == "legacy" else None)
            scope = deployment.scope_of(deployment.call_headers(era, built.token, session),
                                        body)
            status, _, reply = await exchange(scope, body)
            if status != 200:
                raise AssertionError(f"{loop}: {status} {reply[:300]!r}")
            deployment.check_reply(reply)
            bad = 0
            os.getppid()  # the mark: callgrind dumps its counts here (--dump-before=getppid)
            for _ in range(calls):
                status, _, reply = await exchange(scope, body)
                bad += status != 200
            if recorder is not None:
                recorder.flush()  # what the flusher had not written yet
            os.getppid()  # and here: the second part is the loop's, every thread's work in it
            deployment.check_reply(reply)
            if bad:
                raise AssertionError(f"{loop}: {bad} of {calls} replies failed")

        asyncio.run(run())
        built.stop()


def _asgi_sdk(calls: int) -> None:
    """``calls`` requests (after one warm-up) through the SDK's ASGI app, every status and
    reply checked; the client stays connected until each answer is complete."""
    import deployment
    import gateway_servers

    app = gateway_servers.build("sdk")
    call = deployment.checked_call(app, b"PMT-771: HELD")

    async def run() -> None:
        stop = await deployment.start_lifespan(app)
        await call()
        os.getppid()  # the mark (--dump-before=getppid)
        for _ in range(calls):
            await call()
        os.getppid()
        await stop()

    asyncio.run(run())


_KEY_ENV = "TOOLKEEPER_BENCH_RSA_KEY"
"""A PEM private key file the parent makes once for every ``jwt`` run: generating an RSA key
costs a varying number of instructions (a random prime search), which would not cancel out
between the small and the large run."""


def _bench_rsa_key() -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = os.environ.get(_KEY_ENV)
    if path:
        return serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _share_rsa_key(tmp: str) -> None:
    from cryptography.hazmat.primitives import serialization

    path = Path(tmp) / "bench-key.pem"
    path.write_bytes(_bench_rsa_key().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    os.environ[_KEY_ENV] = str(path)


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


_TOTALS = re.compile(rb"^totals:\s*(\d+)", re.MULTILINE)


def _count_marked(loop: str, calls: int, src: Path | None) -> float:
    return marked_count([__file__, "--child", loop, str(calls)], calls, src)


def marked_count(script: list[str], calls: int, src: Path | None) -> float:
    """Instructions per call of a loop (``python *script``) that marks its start and end
    with ``os.getppid()``: one valgrind run, dumped at each mark; the second part divided by
    ``calls``. ``src``: import toolkeeper from there."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--dump-before=getppid",
             f"--callgrind-out-file={tmp}/out", sys.executable, *script],
            env=env, capture_output=True, timeout=3600, check=False)
        part = Path(tmp) / "out.2"
        found = _TOTALS.search(part.read_bytes()) if part.exists() else None
    if run.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed ({' '.join(script[1:])}): "
                         f"{run.stderr.decode(errors='replace')[-2000:]}")
    return int(found.group(1)) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=2, metavar=("LOOP", "CALLS"), help=argparse.SUPPRESS)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=3000)
    parser.add_argument("--loop", choices=(*LOOPS, *ASGI_LOOPS, SDK_LOOP, *PAGE_LOOPS,
                                           "rollout"),
                        action="append")
    parser.add_argument("--asgi", action="store_true",
                        help="the deployment loops through the ASGI app (bench/deployment.py)")
    parser.add_argument("--pages", action="store_true", help="the paged tools/list loops")
    parser.add_argument("--src", type=Path, action="append",
                        help="import toolkeeper from this src directory (repeatable: each is "
                             "counted, the ratios are the first's; '.' is this checkout)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="valgrind runs at once (each is one process)")
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    shared = tempfile.TemporaryDirectory()
    _share_rsa_key(shared.name)
    loops = args.loop or (tuple(PAGE_LOOPS) if args.pages
                          else (*ASGI_LOOPS, SDK_LOOP) if args.asgi else LOOPS)
    sources: list[Path | None] = ([None if str(src) == "." else src for src in args.src]
                                  if args.src else [None])
    by_source: dict[Path | None, dict[str, float]] = {src: {} for src in sources}
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        counts = []
        for src in sources:
            for loop in loops:
                if loop in ASGI_LOOPS or loop == SDK_LOOP:
                    counts.append((src, loop, pool.submit(_count_marked, loop, args.large, src),
                                   None))
                else:
                    counts.append((src, loop, pool.submit(_count, loop, args.small, src),
                                   pool.submit(_count, loop, args.large, src)))
        for src, loop, small, large in counts:
            value = (small.result() if large is None
                     else (large.result() - small.result()) / (args.large - args.small))
            by_source[src][loop] = value
            where = "" if len(sources) == 1 else f"  ({src or 'this checkout'})"
            print(f"{loop:<22} {value:>10,.0f} instructions per call{where}", flush=True)
    results = by_source[sources[0]]
    for loop in ("page-one", "page-first", "page-cached"):
        if loop in results and "page-write" in results:
            print(f"{loop} / page-write {results[loop] / results['page-write']:.2f}x")
    if "sync-inline" in results and "sync-thread" in results:
        print(f"thread hop {results['sync-thread'] - results['sync-inline']:,.0f} instructions")
    if "dispatch" in results and "floor" in results:
        print(f"dispatch / floor {results['dispatch'] / results['floor']:.2f}x")
    for src, counted in by_source.items():
        where = "" if len(sources) == 1 else f"  ({src or 'this checkout'})"
        for suffix in ("", "-legacy"):
            base = counted.get(f"asgi-anonymous{suffix}")
            for config in ("demo", "deploy", "deploy-jwt"):
                loop = f"asgi-{config}{suffix}"
                if base and loop in counted:
                    print(f"{loop} / asgi-anonymous{suffix} {counted[loop] / base:.3f}x{where}")
        sdk = counted.get(SDK_LOOP)
        for loop in ("asgi-anonymous", "asgi-deploy"):
            if sdk and loop in counted:
                print(f"{SDK_LOOP} / {loop} {sdk / counted[loop]:.2f}x{where}")
    for loop in ("jwt", "key", "observed", "observed-jwt", "observed-key"):
        if "dispatch" in results and loop in results:
            print(f"{loop} / dispatch {results[loop] / results['dispatch']:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
