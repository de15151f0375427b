"""The kit of the stdio process-lifecycle tests: ``toolkeeper serve --stdio`` as a real subprocess over a
temp SQLite registry, with an estate of hunt tools and their handlers written to a temp
directory, and bounded line reads from its stdout."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

__all__ = [
    "BOUND_S",
    "ENVELOPE",
    "HANDLERS",
    "INIT",
    "INITIALIZED",
    "Served",
    "call",
    "encode",
    "lines_are_json",
    "run_redirected",
    "spawn",
]

BOUND_S: Final = 5.0
"""The bound on every wait for something that should happen at once (a process start is
included: the registry opens and the estate is published first)."""

ENVELOPE: Final[dict[str, Any]] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                   "io.modelcontextprotocol/clientCapabilities": {}}
INIT: Final[dict[str, Any]] = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "hunt", "version": "1"}}}
INITIALIZED: Final[dict[str, Any]] = {"jsonrpc": "2.0", "method": "notifications/initialized"}

HANDLERS: Final = '''
import asyncio
import sys
import time

from toolkeeper.server import ToolHandlers


def handlers():
    h = ToolHandlers()

    async def block(arguments, ctx):
        await ctx.progress(0, None, "started")
        await asyncio.Event().wait()
        return "never"

    async def brief(arguments, ctx):
        await ctx.progress(0, None, "started")
        await asyncio.sleep(0.3)
        return "finished"

    async def chatty(arguments):
        print("stray output from a handler")
        return "printed"

    async def boom(arguments):
        raise RuntimeError("secret-detail-xyz")

    def slow(arguments):
        time.sleep(2.5)
        return "slept"

    for name, function in (("hunt.block", block), ("hunt.brief", brief),
                           ("hunt.chatty", chatty), ("hunt.boom", boom), ("hunt.slow", slow)):
        h.bind(name, function)
    return h
'''
TOOLS: Final = ("hunt.block", "hunt.brief", "hunt.chatty", "hunt.boom", "hunt.slow")


def encode(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def call(name: str, request_id: Any, **meta: Any) -> dict[str, Any]:
    """A modern ``tools/call`` of an argument-less tool (``meta``: extra ``_meta`` keys)."""
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {}, "_meta": {**ENVELOPE, **meta}}}


class _Drain:
    """A thread that reads a child's stderr to its end (nothing blocks on a full pipe) and
    lets a test wait, bounded, for a text to appear in it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._text = ""
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for chunk in iter(lambda: os.read(self._stream.fileno(), 65536), b""):
            with self._changed:
                self._text += chunk.decode(errors="replace")
                self._changed.notify_all()

    def wait_for(self, text: str, count: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._text.count(text) >= count, timeout)

    def text(self) -> str:
        """Everything read (the whole stderr once the child has exited)."""
        self._thread.join(BOUND_S)
        with self._changed:
            return self._text


@dataclass
class Served:
    """A running ``toolkeeper serve --stdio``: its pipes, its stderr, the lines read."""

    process: subprocess.Popen[bytes]
    drain: _Drain
    buffer: bytes = b""
    raw_lines: list[bytes] = field(default_factory=list)

    def send(self, *messages: dict[str, Any] | bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(b"".join(m if isinstance(m, bytes) else encode(m) for m in messages))
        stdin.flush()

    def close_stdin(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()

    def line(self, timeout: float = BOUND_S) -> bytes:
        """The next stdout line (without its newline); TimeoutError/EOFError otherwise."""
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(self.buffer.decode(errors="replace"))
                if selector.select(remaining):
                    chunk = os.read(stdout.fileno(), 65536)
                    if not chunk:
                        raise EOFError(self.buffer.decode(errors="replace"))
                    self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\n", 1)
        self.raw_lines.append(raw)
        return raw

    def message(self, timeout: float = BOUND_S) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.line(timeout))
        return value

    def rest(self, timeout: float = BOUND_S) -> list[bytes]:
        """Every stdout line until end of output."""
        lines: list[bytes] = []
        while True:
            try:
                lines.append(self.line(timeout))
            except EOFError as end:
                if str(end):
                    lines.append(str(end).encode())
                return lines

    def exited(self, timeout: float = BOUND_S) -> int | None:
        """The exit status, or None when the process is still running after ``timeout``."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def blocked_reading_stdin(self, timeout: float = BOUND_S) -> bool:
        """Whether, within ``timeout``, one of the server's threads sits in ``read(0, ...)`` on
        its stdin pipe (Linux /proc; a bounded poll of kernel state, there is no event for it)."""
        deadline = time.monotonic() + timeout
        tick = threading.Event()
        tasks = Path(f"/proc/{self.process.pid}/task")
        while time.monotonic() < deadline:
            for task in tasks.iterdir():
                try:
                    wchan = (task / "wchan").read_text()
                    fields = (task / "syscall").read_text().split()
                except OSError:
                    continue
                if wchan.endswith("pipe_read") and len(fields) > 1 and fields[1] == "0x0":
                    return True
            tick.wait(0.01)
        return False

    def stderr(self) -> str:
        """The whole stderr (call once the process has exited)."""
        return self.drain.text()

    def wait_stderr(self, text: str, count: int = 1, timeout: float = BOUND_S) -> bool:
        """Whether ``text`` appears ``count`` times in stderr within ``timeout``."""
        return self.drain.wait_for(text, count, timeout)

    def stop(self) -> None:
        """Make sure the process is gone (killed if it is still running)."""
        self.close_stdin()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(BOUND_S)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def _estate(directory: Path) -> Path:
    estate = directory / "estate"
    estate.mkdir()
    for name in TOOLS:
        (estate / f"{name}.json").write_text(json.dumps({
            "name": name, "version": "1.0.0", "title": name, "description": f"{name} (hunt)",
            "inputSchema": {"type": "object", "properties": {}},
            "dataClassification": "public", "sideEffect": "read"}))
    return estate


def spawn(directory: Path, *extra: str) -> Served:
    """``toolkeeper serve --stdio`` over a SQLite registry in ``directory`` with the hunt
    estate and handlers (stderr is drained by a thread)."""
    (directory / "hunt_handlers.py").write_text(HANDLERS)
    process = subprocess.Popen(
        [sys.executable, "-m", "toolkeeper.cli.serve_cmd", "--stdio",
         "--registry", f"sqlite:///{directory / 'registry.db'}",
         "--estate", str(_estate(directory)),
         "--handlers", f"{directory / 'hunt_handlers.py'}:handlers", *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stderr is not None
    return Served(process, _Drain(process.stderr))


def run_redirected(directory: Path, redirect: str, stdin: bytes | None = None
                   ) -> subprocess.CompletedProcess[bytes]:
    """``toolkeeper serve --stdio`` (the hunt estate) run to its end under a shell
    ``redirect`` such as ``>&-`` (stdout closed) or ``>/dev/full``; stderr captured."""
    (directory / "hunt_handlers.py").write_text(HANDLERS)
    command = [sys.executable, "-m", "toolkeeper.cli.serve_cmd", "--stdio",
               "--registry", f"sqlite:///{directory / 'registry.db'}",
               "--estate", str(_estate(directory))]
    return subprocess.run(["/bin/sh", "-c", f'exec "$@" {redirect}', "sh", *command],
                          input=stdin, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=4 * BOUND_S, check=False)


def lines_are_json(lines: list[bytes]) -> list[bytes]:
    """The lines that are not one JSON object each."""
    bad: list[bytes] = []
    for raw in lines:
        try:
            ok = isinstance(json.loads(raw), dict)
        except ValueError:
            ok = False
        if not ok:
            bad.append(raw)
    return bad

