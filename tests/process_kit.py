"""Helpers for tests that drive toolkeeper as a real subprocess."""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import toolkeeper

__all__ = ["GatewayLog", "keep_draining", "read_until", "serving_announced_port", "serving_gateway",
           "serving_gateway_logged", "serving_handler", "stop_process"]

SRC = str(Path(toolkeeper.__file__).resolve().parent.parent)
"""This checkout's sources, put first on a child's PYTHONPATH."""
_URL = re.compile(rb"toolkeeper gateway on (http://127\.0\.0\.1:\d+/mcp)\r?\n")
START_TIMEOUT_S = 30.0
_PORT = re.compile(rb"PORT (\d+)\n")


def read_until(stream: IO[bytes] | Any, pattern: re.Pattern[bytes], timeout: float
               ) -> re.Match[bytes]:
    """Read a child's pipe until ``pattern`` matches; TimeoutError or EOFError (with what was
    read) when it does not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while (match := pattern.search(buffer)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(buffer.decode(errors="replace"))
            if selector.select(remaining):
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    raise EOFError(buffer.decode(errors="replace"))
                buffer += chunk
    return match


def keep_draining(stream: IO[bytes] | None) -> GatewayLog:
    """Read a child's pipe in a daemon thread from here on, keeping its lines: a child that
    logs more than a pipe holds (64 KiB on Linux) after its announcement would otherwise
    block on its next write, its event loop with it."""
    assert stream is not None
    log = GatewayLog()
    log.reader = threading.Thread(target=log.drain, args=(stream,), daemon=True)
    log.reader.start()
    return log


def stop_process(proc: subprocess.Popen[Any], grace: float = 20) -> None:
    """SIGTERM ``proc`` if it still runs, wait up to ``grace`` seconds, then SIGKILL; close
    its standard error pipe."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()


class GatewayLog:
    """The lines a serving gateway logs, kept as they arrive (read by a drain thread)."""

    def __init__(self) -> None:
        self.reader: threading.Thread | None = None
        """The thread that drains the pipe (:func:`keep_draining`)."""
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._ended = False

    def drain(self, stream: IO[bytes]) -> None:
        try:
            for raw in iter(stream.readline, b""):
                with self._changed:
                    self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                    self._changed.notify_all()
        except (OSError, ValueError):  # the pipe was closed under the reader: the log ends
            pass
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait(self, needle: str, start: int = 0, timeout: float = START_TIMEOUT_S) -> int:
        """The index of the first line from ``start`` on that holds ``needle``, waiting for it
        (AssertionError with the lines when the log ends or ``timeout`` passes first)."""
        def found() -> int | None:
            return next((i for i in range(start, len(self.lines)) if needle in self.lines[i]),
                        None)
        with self._changed:
            self._changed.wait_for(lambda: found() is not None or self._ended, timeout)
            index = found()
        assert index is not None, f"{needle!r} not logged: {self.lines[start:]}"
        return index


@contextmanager
def serving_gateway(serve_args: Sequence[str], cwd: Path | None = None) -> Iterator[str]:
    """Run ``python -m toolkeeper serve <serve_args>`` (an ephemeral 127.0.0.1 port) on this
    checkout's sources, in ``cwd`` (default: this process's); yield the URL it announces. Its
    log is drained so a chatty server never blocks on a full pipe; on exit it is stopped by
    its pid."""
    with serving_gateway_logged(serve_args, cwd) as (url, _):
        yield url


@contextmanager
def serving_gateway_logged(serve_args: Sequence[str], cwd: Path | None = None
                           ) -> Iterator[tuple[str, GatewayLog]]:
    """:func:`serving_gateway`, yielding its URL and the :class:`GatewayLog` of what it logs
    after announcing it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", *serve_args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stderr is not None
    drain: threading.Thread | None = None
    try:
        url = read_until(proc.stderr, _URL, START_TIMEOUT_S).group(1).decode()
        log = keep_draining(proc.stderr)
        drain = log.reader
        yield url, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if drain is not None:
            drain.join(timeout=10)  # the pipe ends with the process: join, then close
        proc.stderr.close()


@contextmanager
def serving_announced_port(argv: Sequence[str], env: Mapping[str, str] | None = None
                           ) -> Iterator[str]:
    """Run ``argv``, a test server that prints ``PORT <n>`` on stdout once it listens on
    127.0.0.1; yield its ``/mcp`` URL; on exit stop it by its pid."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        assert proc.stdout is not None
        port = read_until(proc.stdout, _PORT, START_TIMEOUT_S).group(1).decode()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()


@contextmanager
def serving_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A stdlib ``ThreadingHTTPServer`` with ``handler`` on an ephemeral 127.0.0.1 port, in a
    thread of this process, yielding its ``/mcp`` URL; shut down and joined on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
