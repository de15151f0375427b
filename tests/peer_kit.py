"""Every peer a test drives that is not part of this checkout, installed into the shared cache on
first use: the interop matrix's Python clients (each pinned ``mcp``/``fastmcp`` release in its own
virtualenv), Node 22 with the TypeScript SDK clients and the MCP Inspector (``tests/interop/node``),
and ``@modelcontextprotocol/server-everything`` (Node 22 from the ``node`` npm package beside it).

The cache is ``$TOOLKEEPER_INTEROP_CACHE`` or ``~/.cache/toolkeeper-interop``; an empty one is
filled as tests ask. Each install is one ``cached_dir`` entry: built under an exclusive file lock
(two pytest processes sharing the cache wait for each other) and marked ready last (an
interrupted build is removed and redone). The session-scoped ``peers`` fixture in
``tests/conftest.py`` hands out one :class:`Peers`; a test that needs a peer asks it, so any test
file passes alone, in any order, from an empty cache.

A peer that cannot be installed skips the test with the install's error on a workstation; under
``CI=true`` it fails the test (a missing peer there is a broken job, never a skip).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest

sys.path.append(str(Path(__file__).resolve().parent / "interop"))  # the interop kit and pins

from interop_kit import ClientSpec, InstallError, cache_root, cached_dir, run_install
from node_clients import install_node_clients
from python_clients import PYTHON_PINS, client_python

from toolkeeper.conformance.sdk_clients import Located, locate

__all__ = [
    "EVERYTHING_NODE",
    "EVERYTHING_PACKAGE",
    "EVERYTHING_VERSION",
    "INSTALL_TIMEOUT_S",
    "MCP_SERVER_TIME",
    "TS_SERVER_V2",
    "Peers",
    "install_everything",
    "install_ts_server_v2",
]

T = TypeVar("T")

INSTALL_TIMEOUT_S = 900
"""The backstop timeout (pytest-timeout) of a test that uses ``peers``: its first use may wait
for a cold install (pip, npm ci), each step of which ``run_install`` bounds on its own."""

EVERYTHING_VERSION = "2026.8.31"
EVERYTHING_NODE = "22.23.3"
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"

# The SDK diff's cached SDKs (toolkeeper.conformance.sdk_clients) and the install each needs;
# ``python`` is the ``mcp`` of this interpreter (the dev extra), so it needs none.
_NEWEST_1X = "mcp 1.30.0"


def _build_everything(target: Path) -> None:
    target.mkdir(parents=True)
    (target / "package.json").write_text(json.dumps({
        "name": "toolkeeper-kernel-server-everything", "private": True,
        "dependencies": {EVERYTHING_PACKAGE: EVERYTHING_VERSION, "node": EVERYTHING_NODE}},
        indent=2))
    run_install(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target)


def install_everything(cache: Path) -> Path:
    """server-everything's install directory in ``cache`` (InstallError when npm cannot)."""
    return cached_dir(cache, f"server-everything-{EVERYTHING_VERSION}-node{EVERYTHING_NODE}",
                      _build_everything)


TS_SERVER_V2 = {"@modelcontextprotocol/server": "2.4.0", "@modelcontextprotocol/node": "2.1.2",
                "zod": "4.6.7", "node": EVERYTHING_NODE}
"""The TypeScript SDK v2 server (the newest 2.x), its Node HTTP adapter and Node 22."""

MCP_SERVER_TIME = ("mcp-server-time==2026.10.19",)
"""The reference time server (PyPI), in a virtualenv of its own."""


def _build_ts_server_v2(target: Path) -> None:
    target.mkdir(parents=True)
    (target / "package.json").write_text(json.dumps({
        "name": "toolkeeper-panel-ts-server-v2", "private": True, "type": "module",
        "dependencies": TS_SERVER_V2}, indent=2))
    run_install(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target)


def install_ts_server_v2(cache: Path) -> Path:
    """The TypeScript SDK v2 server's install directory in ``cache`` (InstallError when npm
    cannot)."""
    key = "-".join(f"{name.rsplit('/', 1)[-1]}{version}" for name, version in TS_SERVER_V2.items())
    return cached_dir(cache, f"ts-server-v2-{key}", _build_ts_server_v2)


def under_ci() -> bool:
    return os.environ.get("CI") == "true"


class Peers:
    """Installs on first use (once per process and key, under the cache's file locks) and
    hands out what a test runs: argv prefixes and install directories."""

    def __init__(self, cache: Path | None = None) -> None:
        self.cache = cache if cache is not None else cache_root()
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._done: dict[str, object] = {}

    def _once(self, key: str, build: Callable[[], T]) -> T:
        """``build()`` once per key; its InstallError is kept and raised again to each asker."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._done:
                try:
                    self._done[key] = build()
                except InstallError as exc:
                    self._done[key] = exc
            value = self._done[key]
        if isinstance(value, InstallError):
            raise value
        return value  # type: ignore[return-value]

    def _need(self, what: str, build: Callable[[], T]) -> T:
        """:meth:`_once`, a failed install turned into the test's failure (CI) or skip."""
        try:
            return self._once(what, build)
        except InstallError as exc:
            message = f"installing {what} into {self.cache} failed: {str(exc)[-1500:]}"
            if under_ci():
                pytest.fail(message, pytrace=False)
            pytest.skip(message)

    # --- the peers -----------------------------------------------------------------------------

    def python_client(self, requirements: tuple[str, ...]) -> list[str]:
        """The isolated interpreter of the virtualenv holding ``requirements``."""
        return self._need("python " + " ".join(requirements),
                          lambda: client_python(requirements, self.cache))

    def node_clients(self) -> Path:
        """Node 22 with the TypeScript SDK v1/v2 clients and the Inspector (``npm ci``)."""
        return self._need("node clients", lambda: install_node_clients(self.cache))

    def everything(self) -> Path:
        """server-everything with its Node 22."""
        return self._need("server-everything", lambda: install_everything(self.cache))

    def ts_server_v2(self) -> Path:
        """The TypeScript SDK v2 server (``@modelcontextprotocol/server``) with its Node 22."""
        return self._need("the TypeScript SDK v2 server", lambda: install_ts_server_v2(self.cache))

    def mcp_server_time(self) -> list[str]:
        """``mcp-server-time``'s argv in its own virtualenv (stdio)."""
        python = self.python_client(MCP_SERVER_TIME)
        return [*python, "-m", "mcp_server_time"]

    def interop(self, spec: ClientSpec) -> list[str]:
        """An interop matrix client's driver argv prefix (``spec.prepare``); a failed install
        fails the cell under CI and everywhere else alike (the matrix never skips one)."""
        try:
            return self._once(f"interop {spec.name} {spec.prepare!r}",
                              lambda: spec.prepare(self.cache))
        except InstallError as exc:
            pytest.fail(f"installing {spec.name} into {self.cache} failed: {exc}",
                        pytrace=False)

    def interop_all(self, specs: Iterable[ClientSpec]) -> None:
        """Install ``specs`` in parallel (a failure is kept for :meth:`interop` to report)."""
        chosen = list(specs)

        def one(spec: ClientSpec) -> None:
            with contextlib.suppress(InstallError):
                self._once(f"interop {spec.name} {spec.prepare!r}",
                           lambda: spec.prepare(self.cache))

        with ThreadPoolExecutor(max_workers=max(1, len(chosen))) as pool:
            list(pool.map(one, chosen))

    def _install_sdk(self, name: str) -> None:
        if name == "python1":
            self.python_client(PYTHON_PINS[_NEWEST_1X])
        elif name == "typescript":
            self.node_clients()

    def sdk(self, name: str) -> Located:
        """An SDK of the SDK diff, installed when it lives in the cache, then located;
        absent: skipped with the reason (failed under CI)."""
        self._install_sdk(name)
        found = locate(name)
        if found.reason is not None:
            if under_ci():
                pytest.fail(f"{name} is required under CI: {found.reason}", pytrace=False)
            pytest.skip(found.reason)
        return found

    def sdks(self, names: Iterable[str]) -> dict[str, Located]:
        """Each SDK installed where it can be, then located (``reason`` set for an absent one,
        left for the test to skip on); under CI an absent one fails."""
        found: dict[str, Located] = {}
        for name in names:
            with contextlib.suppress(pytest.skip.Exception):
                self._install_sdk(name)
            found[name] = locate(name)
            if found[name].reason is not None and under_ci():
                pytest.fail(f"{name} is required under CI: {found[name].reason}", pytrace=False)
        return found
