"""Paginated ``tools/list`` (issue 14, acceptance point 6): what serving a cached page of a
10,000-tool estate costs against writing its bytes.

A memory registry holds ``--tools`` tools (default 10,000) with small object schemas; the
gateway pages them by ``--page-size`` (default 100) with a configured sealer. Measured per
request, in-process through ``kernel.handle_asgi`` (what the HTTP transport calls), the reply
encoded to bytes:

* ``one page``: for scale, the unpaged list of an estate of one page's size, as a list
  that fits one page is served;
* ``first page``: a modern ``tools/list`` without a cursor (seals the next cursor);
* ``cached page``: the same with the first page's cursor (opens it, seals the next one);
* ``write bytes``: the floor: the JSON-RPC response holding that page's cached array and a
  cursor, encoded (no decoding, no principal, no view lookup, no sealing);
* ``serialize``: for scale, building the page's array afresh (``to_mcp()`` and canonical
  JSON), which the per-view page cache saves.

Target: ``cached page`` at most 2x ``write bytes``. Run: ``python bench/pages.py``
(``--quick`` for a short smoke run).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.spec import DataClassification, spec_from_mapping
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    Reply,
    decode_message,
    encode_message,
    result_message,
)
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import build_app, fixed_principal

VERSION = "2026-07-28"
META = {PROTOCOL_VERSION_KEY: VERSION, CLIENT_CAPABILITIES_KEY: {}}
PRINCIPAL = Principal("bench", frozenset(), DataClassification.PUBLIC)
PAIRS = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
         (b"accept", b"application/json, text/event-stream"),
         (b"mcp-protocol-version", VERSION.encode()), (b"mcp-method", b"tools/list")]


def seed(registry: Registry, tools: int) -> None:
    for index in range(tools):
        registry.publish(spec_from_mapping({
            "name": f"tool.{index:05d}", "version": "1.0.0", "title": f"Tool {index}",
            "description": "A tool of the paging benchmark.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}},
                            "required": ["a"]},
            "dataClassification": "public", "sideEffect": "read"}))


def body(cursor: str | None) -> bytes:
    params: dict[str, Any] = {"_meta": META}
    if cursor is not None:
        params["cursor"] = cursor
    return encode_message({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params})


def per_call_us(func: Callable[[], object], calls: int, repeats: int) -> float:
    """The least over ``repeats`` of the mean CPU microseconds per call (the least, not the
    median: on the shared machine other work only ever adds, and the rows are compared)."""
    rounds = []
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            func()
        rounds.append((time.process_time() - start) / calls * 1e6)
    return min(rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--calls", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="1,000 tools, few calls")
    args = parser.parse_args(argv)
    if args.quick:
        args.tools, args.calls, args.repeats = 1_000, 50, 2
    small = Registry.open("memory:")  # the one-page list of a page-sized estate, for scale
    seed(small, args.page_size)
    _, one_page = build_app(small, resolve_principal=fixed_principal(PRINCIPAL))
    registry = Registry.open("memory:")
    seed(registry, args.tools)
    _, gateway = build_app(registry, sealer=Sealer([bytes(32)]), list_page_size=args.page_size,
                           resolve_principal=fixed_principal(PRINCIPAL))
    kernel = gateway.kernel

    def serve(raw: bytes, kernel: Any = kernel) -> bytes:
        reply = kernel.handle_asgi(raw, PAIRS, None, None, None, time.perf_counter_ns())
        assert isinstance(reply, Reply) and reply.status == 200
        return reply.body

    first = decode_message(serve(body(None)))["result"]
    cursor = first["nextCursor"]
    cached_body = body(cursor)
    second = decode_message(serve(cached_body))["result"]
    view = gateway.views.view(PRINCIPAL)
    page = view.pages[1]
    assert [t["name"] for t in second["tools"]] == [s.name for s in
                                                    view.specs[args.page_size:2 * args.page_size]]
    specs = view.specs[args.page_size:2 * args.page_size]
    one_page_body = body(None)
    rows = {
        "one page": per_call_us(lambda: serve(one_page_body, one_page.kernel), args.calls,
                                args.repeats),
        "first page": per_call_us(lambda: serve(body(None)), args.calls, args.repeats),
        "cached page": per_call_us(lambda: serve(cached_body), args.calls, args.repeats),
        "write bytes": per_call_us(lambda: encode_message(result_message(2, {
            "tools": page.tools_json, "nextCursor": cursor})), args.calls, args.repeats),
        "serialize": per_call_us(lambda: canonical_json([s.to_mcp() for s in specs]),
                                 max(1, args.calls // 10), args.repeats),
    }
    print(f"{args.tools} tools, {len(view.pages)} pages of {args.page_size}; page 2 is "
          f"{len(bytes(page.tools_json)):,} bytes; CPU microseconds per request (least of "
          f"{args.repeats} x {args.calls})")
    for label, value in rows.items():
        print(f"  {label:12} {value:9.1f} us")
    ratio = rows["cached page"] / rows["write bytes"]
    print(f"cached page / write bytes: {ratio:.2f}x (target at most 2x); "
          f"serialize / cached page: {rows['serialize'] / rows['cached page']:.1f}x")
    registry.close()
    small.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
