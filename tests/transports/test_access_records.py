"""The runner's access lines are decided before a record exists: under ``access = "errors"``
a successful request makes no ``uvicorn.access`` record at all (a filter on the logger, which
runs only once a record is made, sees none), an error makes one as uvicorn would; ``off`` makes
none; ``all`` one a request. The client address of a line is the TCP peer's, never a
forwarded header's. Real HTTP on 127.0.0.1, every wait bounded."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest

from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.transports import serve_in_thread
from toolkeeper.transports.access_lines import ErrorLines, quiet

ACCESS = logging.getLogger("uvicorn.access")
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}
LIST_HEADERS = {"Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}


class _Seen(logging.Filter):
    """Every record the access logger made, kept (and passed on)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return True


@pytest.fixture
def seen() -> Iterator[_Seen]:
    seen, handler = _Seen(), logging.NullHandler()
    ACCESS.addFilter(seen)
    ACCESS.addHandler(handler)  # uvicorn logs access lines only where a handler would get them
    try:
        yield seen
    finally:
        ACCESS.removeFilter(seen)
        ACCESS.removeHandler(handler)


def _statuses(access: str, seen: _Seen, headers: dict[str, str] | None = None) -> list[int]:
    app, _ = build_app(Registry.open("memory:"))
    with (serve_in_thread(app, log_level="info", access=access) as running,
          httpx.Client(timeout=10, headers=headers) as http):
        for _ in range(3):
            assert http.get(running.base_url + "/elsewhere").status_code == 404
            assert http.post(running.url, json=LIST, headers=LIST_HEADERS).status_code == 200
    assert all(isinstance(record.args, tuple) for record in seen.records)
    return [record.args[4] for record in seen.records]  # type: ignore[index]


@pytest.mark.parametrize(("access", "statuses"), [
    ("errors", [404, 404, 404]), ("off", []), ("all", [404, 200, 404, 200, 404, 200]),
])
def test_only_the_lines_the_mode_keeps_are_made_into_records(
        access: str, statuses: list[int], seen: _Seen) -> None:
    assert _statuses(access, seen) == statuses


def test_a_line_names_the_tcp_peer_not_a_forwarded_address(seen: _Seen) -> None:
    _statuses("errors", seen, {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"})
    clients = {record.args[0].rsplit(":", 1)[0] for record in seen.records}  # type: ignore[index]
    assert clients == {"127.0.0.1"}


@pytest.mark.parametrize(("args", "dropped"), [
    (("1.2.3.4:5", "GET", "/", "1.1", 200), True),
    (("1.2.3.4:5", "GET", "/", "1.1", 399), True),
    (("1.2.3.4:5", "GET", "/", "1.1", 400), False),
    (("1.2.3.4:5", "GET", "/", "1.1", 503), False),
    (("1.2.3.4:5", "GET", "/", "1.1", "200"), False),  # another shape: kept
    (("short",), False),
    ((), False),
])
def test_error_lines_drop_exactly_what_the_access_filter_drops(
        args: tuple[object, ...], dropped: bool, seen: _Seen) -> None:
    assert quiet(args) is dropped
    ErrorLines(ACCESS).info("%s" * len(args), *args)
    assert len(seen.records) == (0 if dropped else 1)
