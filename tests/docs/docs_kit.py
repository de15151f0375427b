"""The runnable-blocks convention of README.md and docs/, read and run.

A fenced shell block is runnable when the line right before its opening fence is
``<!-- runnable -->``, ``<!-- runnable exit=N -->`` (an expected non-zero exit) or
``<!-- runnable background -->`` (a long-running process such as ``toolkeeper serve``, started
and left running until the page ends, then stopped by its pid, after its
``toolkeeper gateway on URL`` line). Each ``<!-- expect: TEXT -->`` line right after the
closing fence is text the block's standard output contains.

A page's blocks run in order, in one fresh temporary directory holding a copy of ``examples/``,
with HOME and XDG_DATA_HOME inside it and this interpreter's ``toolkeeper`` first on PATH, each
block under ``bash -e``. The literal port ``8000`` in every command and expectation of the page
is replaced by a free port, and a ``toolkeeper serve`` that names no ``--port`` gets one, so a
page stays copy-paste correct and two runs never collide.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = ["ROOT", "SHELLS", "Block", "PageRun", "blocks_of", "doc_pages", "free_port",
           "page_env", "stop"]

ROOT = Path(__file__).resolve().parents[2]
SHELLS = frozenset({"bash", "sh", "shell", "console"})
BIN = Path(sys.executable).parent
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_MARK = re.compile(r"^\s*<!--\s*runnable(?:\s+(background|exit=(\d+)))?\s*-->\s*$")
_EXPECT = re.compile(r"^\s*<!--\s*expect:\s?(.*?)\s*-->\s*$")
_PORT = re.compile(r"(?<!\d)8000(?!\d)")
_SERVE = re.compile(r"\btoolkeeper serve\b")
_READY = re.compile(r"toolkeeper gateway on (\S+)")
READY_LINES = 400
"""A background process's standard-error lines read while waiting for its ready line."""
BLOCK_TIMEOUT_S = 90
STOP_GRACE_S = 20


@dataclass(frozen=True)
class Block:
    page: str
    index: int
    line: int
    language: str
    code: str
    runnable: bool
    background: bool = False
    exit_code: int = 0
    expect: tuple[str, ...] = ()

    @property
    def case_id(self) -> str:
        return f"{self.page}:{self.index}"


def doc_pages() -> list[Path]:
    """README.md and every Markdown page under docs/, in path order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    """Every fenced block of the page with its marks, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, language = opening.groups()
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        expect = []
        while i < len(lines) and (found := _EXPECT.match(lines[i])):
            expect.append(found.group(1))
            i += 1
        mark = _MARK.match(lines[start - 1]) if start else None
        blocks.append(Block(
            page=page, index=len(blocks), line=start + 1, language=language.lower(),
            code="\n".join(body) + "\n", runnable=mark is not None,
            background=mark is not None and mark.group(1) == "background",
            exit_code=int(mark.group(2)) if mark is not None and mark.group(2) else 0,
            expect=tuple(expect)))
    return blocks


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def page_env(home: Path) -> dict[str, str]:
    """The caller's environment with the page's home and data directory, this checkout's
    ``toolkeeper`` first on PATH, and no registry or token inherited."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TOOLKEEPER_REGISTRY", "TOOLKEEPER_TOKEN", "TOOLKEEPER_SEALING_KEYS")}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"),
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    return env


def stop(proc: subprocess.Popen[Any]) -> int:
    """SIGTERM ``proc`` by its pid, wait a bounded grace, then SIGKILL; its exit status."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_GRACE_S)
    return int(proc.returncode)


def _drain(stream: IO[bytes], sink: list[bytes]) -> None:
    for line in iter(stream.readline, b""):
        sink.append(line)
    stream.close()


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    problem: str | None = None


@dataclass
class PageRun:
    """One page's blocks, run in order on demand in one directory."""

    path: Path
    home: Path
    port: int = field(default_factory=free_port)
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    background: list[tuple[subprocess.Popen[bytes], list[bytes]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.blocks = [b for b in blocks_of(self.path) if b.runnable]
        shutil.copytree(ROOT / "examples", self.home / "examples",
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.env = page_env(self.home)

    def command(self, block: Block) -> str:
        """The block as it runs: the free port for 8000, ``--port`` on a serve naming none."""
        code = _PORT.sub(str(self.port), block.code)
        if block.background and "--port" not in code:
            code = _SERVE.sub(f"toolkeeper serve --port {self.port}", code, count=1)
        return code

    def expected(self, block: Block) -> list[str]:
        return [_PORT.sub(str(self.port), text) for text in block.expect]

    def outcome(self, index: int) -> Outcome:
        """The outcome of runnable block ``index``, running every earlier one first."""
        for block in self.blocks[:index + 1]:
            if block.index not in self.outcomes:
                self.outcomes[block.index] = self._run(block)
        return self.outcomes[self.blocks[index].index]

    def _run(self, block: Block) -> Outcome:
        failed = [b.case_id for b in self.blocks if b.index in self.outcomes
                  and self.outcomes[b.index].problem is not None]
        if failed:
            return Outcome(-1, "", "", f"an earlier block of the page failed: {failed[0]}")
        code = self.command(block)
        if block.background:
            return self._start(block, code)
        try:
            done = subprocess.run(["bash", "-e", "-c", code], cwd=self.home, env=self.env,
                                  capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            return Outcome(-1, str(exc.stdout or ""), str(exc.stderr or ""),
                           f"no end within {BLOCK_TIMEOUT_S}s")
        outcome = Outcome(done.returncode, done.stdout, done.stderr)
        if done.returncode != block.exit_code:
            outcome.problem = f"exit {done.returncode}, expected {block.exit_code}"
        missing = [text for text in self.expected(block) if text not in done.stdout]
        if missing and outcome.problem is None:
            outcome.problem = f"standard output lacks {missing[0]!r}"
        return outcome

    def _start(self, block: Block, code: str) -> Outcome:
        script = f"exec {code.strip()}" if len(code.strip().splitlines()) == 1 else code
        proc = subprocess.Popen(["bash", "-e", "-c", script], cwd=self.home, env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        assert proc.stderr is not None
        read: list[bytes] = []
        for _ in range(READY_LINES):
            line = proc.stderr.readline()
            if not line:
                break
            read.append(line)
            if _READY.search(line.decode(errors="replace")):
                self.background.append((proc, read))
                threading.Thread(target=_drain, args=(proc.stderr, read), daemon=True).start()
                return Outcome(0, "", b"".join(read).decode(errors="replace"))
        stop(proc)
        proc.stderr.close()
        return Outcome(int(proc.returncode), "", b"".join(read).decode(errors="replace"),
                       f"no 'toolkeeper gateway on URL' line in {len(read)} lines")

    def close(self) -> list[int]:
        """Stop every background process of the page by its pid; their exit statuses."""
        codes = [stop(proc) for proc, _ in self.background]
        self.background.clear()
        return codes
