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
(``--quick`` for a short smoke run). The same requests are loops of ``bench/callgrind.py``
(``--pages``: ``page-one``, ``page-first``, ``page-cached``, ``page-write``), counted in
instructions, which do not move with the shared machine's load.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
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
from toolkeeper.registry.memory import MemoryStore
from toolkeeper.registry.store import AuditRecord
from toolkeeper.server import build_app, fixed_principal

VERSION = "2026-07-28"
META = {PROTOCOL_VERSION_KEY: VERSION, CLIENT_CAPABILITIES_KEY: {}}
PRINCIPAL = Principal("bench", frozenset(), DataClassification.PUBLIC)
PAIRS = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
         (b"accept", b"application/json, text/event-stream"),
         (b"mcp-protocol-version", VERSION.encode()), (b"mcp-method", b"tools/list")]
TEMPLATE = spec_from_mapping({
    "name": "tool.00000", "version": "1.0.0", "title": "Tool 0",
    "description": "A tool of the paging benchmark.",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}},
                    "required": ["a"]},
    "dataClassification": "public", "sideEffect": "read"})


def estate(tools: int) -> Registry:
    """A memory registry of ``tools`` copies of ``TEMPLATE`` named ``tool.00000``...: written
    straight into the store (the guard has nothing to judge in a first version, and parsing
    10,000 contracts under callgrind would take minutes), then loaded as a registry loads."""
    store = MemoryStore()
    for index in range(tools):
        spec = replace(TEMPLATE, name=f"tool.{index:05d}", title=f"Tool {index}",
                       publisher="bench", published_at="2026-12-01T00:00:00Z")
        with store.change(spec.name) as tx:
            tx.insert(spec)
            tx.append_audit(AuditRecord(spec.published_at or "", "bench", "publish",
                                        spec.name, "1.0.0"))
    return Registry(store)


def body(cursor: str | None) -> bytes:
    params: dict[str, Any] = {"_meta": META}
    if cursor is not None:
        params["cursor"] = cursor
    return encode_message({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params})


def requests(tools: int, page_size: int) -> tuple[dict[str, Callable[[], object]], str]:
    """The measured requests by row label (each checked once here), and a line describing
    the estate."""
    small = estate(page_size)  # the one-page list of a page-sized estate, for scale
    _, one_page = build_app(small, resolve_principal=fixed_principal(PRINCIPAL))
    _, gateway = build_app(estate(tools), sealer=Sealer([bytes(32)]), list_page_size=page_size,
                           resolve_principal=fixed_principal(PRINCIPAL))

    def serve(raw: bytes, kernel: Any = gateway.kernel) -> bytes:
        reply = kernel.handle_asgi(raw, PAIRS, None, None, None, time.perf_counter_ns())
        assert isinstance(reply, Reply) and reply.status == 200
        return reply.body

    cursor = decode_message(serve(body(None)))["result"]["nextCursor"]
    cached_body = body(cursor)
    second = decode_message(serve(cached_body))["result"]
    view = gateway.views.view(PRINCIPAL)
    page, specs = view.pages[1], view.specs[page_size:2 * page_size]
    assert [t["name"] for t in second["tools"]] == [s.name for s in specs]
    one_page_body, first_body = body(None), body(None)
    rows: dict[str, Callable[[], object]] = {
        "one page": lambda: serve(one_page_body, one_page.kernel),
        "first page": lambda: serve(first_body),
        "cached page": lambda: serve(cached_body),
        "write bytes": lambda: encode_message(result_message(2, {
            "tools": page.tools_json, "nextCursor": cursor})),
        "serialize": lambda: canonical_json([s.to_mcp() for s in specs]),
    }
    return rows, (f"{tools} tools, {len(view.pages)} pages of {page_size}; page 2 is "
                  f"{len(bytes(page.tools_json)):,} bytes")


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
    loops, described = requests(args.tools, args.page_size)
    rows = {label: per_call_us(func, max(1, args.calls // 10) if label == "serialize"
                               else args.calls, args.repeats)
            for label, func in loops.items()}
    print(f"{described}; CPU microseconds per request (least of {args.repeats} x "
          f"{args.calls})")
    for label, value in rows.items():
        print(f"  {label:12} {value:9.1f} us")
    ratio = rows["cached page"] / rows["write bytes"]
    print(f"cached page / write bytes: {ratio:.2f}x (target at most 2x); "
          f"serialize / cached page: {rows['serialize'] / rows['cached page']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
