"""docs/cli.md runs as shown: each ``<!-- runnable -->`` block in order, under ``bash -e``, in
one temporary directory holding a copy of ``examples/`` (HOME and XDG_DATA_HOME inside it),
with its exit code and ``<!-- expect: -->`` text checked; a ``background`` block (the
gateway) runs until the page ends, on a free port in place of the page's ``8000``."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from process_kit import read_until, stop_process

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
_BLOCK = re.compile(r"<!-- runnable(?: (background|exit=(\d+)))? -->\n```(?:bash|sh)\n(.*?)"
                    r"\n```\n((?:<!-- expect: .*? -->\n)*)", re.S)
_EXPECT = re.compile(r"<!-- expect: (.*?) -->")
_READY = re.compile(rb"toolkeeper gateway on (http://\S+)\r?\n")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_every_runnable_block_of_the_cli_page_runs_as_shown(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("TOOLKEEPER_TOKEN", None)
    env.pop("TOOLKEEPER_REGISTRY", None)
    port = str(_free_port())
    blocks = _BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 12
    background: list[subprocess.Popen[bytes]] = []
    try:
        for mode, status, code, expects in blocks:
            code = re.sub(r"(?<!\d)8000(?!\d)", port, code)
            if mode == "background":
                if "toolkeeper serve" in code and "--port" not in code:
                    code += f" --port {port}"
                proc = subprocess.Popen(["bash", "-e", "-c", f"exec {code}"], cwd=tmp_path,
                                        env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                background.append(proc)
                assert proc.stderr is not None
                read_until(proc.stderr, _READY, 60)
                continue
            done = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=180, check=False)
            assert done.returncode == int(status or 0), (code, done.stdout, done.stderr)
            for text in _EXPECT.findall(expects):
                assert text in done.stdout, (code, text, done.stdout)
    finally:
        for proc in background:
            stop_process(proc)
