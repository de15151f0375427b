"""Every runnable shell block of ``docs/operations.md`` runs as the docs convention says: in
order, in one fresh directory holding a copy of ``examples/``, with HOME and XDG_DATA_HOME
inside it, ``toolkeeper`` on PATH, each block under ``bash -e``; ``exit=N`` is the block's
expected exit code, ``background`` starts a server left running until the page ends (its
``toolkeeper gateway on URL`` line waited for), ``expect: TEXT`` is in the block's standard
output, and the literal port 8000 is a free port."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from process_kit import START_TIMEOUT_S, read_until, stop_process

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "operations.md"
_MARK = re.compile(r"<!-- runnable(?: (background|exit=(\d+)))? -->")
_EXPECT = re.compile(r"<!-- expect: (.*) -->")
_GATEWAY = re.compile(rb"toolkeeper gateway on (\S+)\n")
BLOCK_TIMEOUT_S = 60


@dataclass
class Block:
    line: int
    script: str
    exit_code: int = 0
    background: bool = False
    expects: tuple[str, ...] = ()


def runnable_blocks(text: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    for number, line in enumerate(lines):
        if not line.startswith("```bash") or number == 0:
            continue
        mark = _MARK.fullmatch(lines[number - 1])
        if mark is None:
            continue
        end = next(i for i in range(number + 1, len(lines)) if lines[i] == "```")
        expects = []
        for after in lines[end + 1:]:
            found = _EXPECT.fullmatch(after)
            if found is None:
                break
            expects.append(found.group(1))
        blocks.append(Block(number + 1, "\n".join(lines[number + 1:end]) + "\n",
                            int(mark.group(2) or 0), mark.group(1) == "background",
                            tuple(expects)))
    return blocks


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _with_port(script: str, port: int, *, background: bool) -> str:
    script = script.replace("8000", str(port))
    if background and "toolkeeper serve" in script and "--port" not in script:
        script = script.replace("toolkeeper serve", f"toolkeeper serve --port {port}", 1)
    return script


def test_the_page_has_runnable_blocks_of_every_kind() -> None:
    blocks = runnable_blocks(PAGE.read_text())
    assert len(blocks) >= 8
    assert any(b.background for b in blocks) and any(b.exit_code == 2 for b in blocks)
    assert all(b.expects for b in blocks if not b.background)


def test_every_runnable_block_of_the_operations_page_runs(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    bin_dir = str(Path(sys.executable).parent)  # this environment's toolkeeper
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / ".local/share"),
           "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")])}
    for name in ("TOOLKEEPER_REGISTRY", "PYTHONPATH"):
        env.pop(name, None)
    port = _free_port()
    background: list[subprocess.Popen[bytes]] = []
    try:
        for block in runnable_blocks(PAGE.read_text()):
            script = _with_port(block.script, port, background=block.background)
            if block.background:
                proc = subprocess.Popen(["bash", "-e", "-c", f"exec {script.strip()}"],
                                        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                background.append(proc)
                assert proc.stderr is not None
                url = read_until(proc.stderr, _GATEWAY, START_TIMEOUT_S).group(1).decode()
                assert url == f"http://127.0.0.1:{port}/mcp"
                continue
            done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S,
                                  check=False)
            assert done.returncode == block.exit_code, (block.line, done.stderr)
            for text in block.expects:
                assert _with_port(text, port, background=False) in done.stdout, (
                    block.line, text, done.stdout)
    finally:
        for proc in background:
            stop_process(proc)
