"""``toolkeeper serve``'s access lines (``[logging] access``, ``--access-log``): a real process
over HTTP on 127.0.0.1 answers three requests with 200 and one with 404, and its standard error
holds a line for each (``all``), for the 404 only (``errors``, the default), or none
(``off``). Every wait is bounded."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from process_kit import SRC, read_until

COMMAND = [sys.executable, "-m", "toolkeeper", "serve", "--demo", "--registry", "memory:",
           "--port", "0"]
URL = re.compile(rb"toolkeeper gateway on (\S+/mcp)\n")
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
           "Mcp-Method": "tools/list"}


def _access_lines(flags: list[str], tmp_path: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([*COMMAND, *flags], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            cwd=tmp_path)
    stderr = proc.stderr
    assert stderr is not None
    output: list[bytes] = []
    try:
        url = read_until(stderr, URL, 30).group(1).decode()
        drain = threading.Thread(target=lambda: output.append(stderr.read()), daemon=True)
        drain.start()
        with httpx.Client(timeout=10) as http:
            for _ in range(3):
                assert http.post(url, json=LIST, headers=HEADERS).status_code == 200
            assert http.get(url.replace("/mcp", "/elsewhere")).status_code == 404
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        drain.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        stderr.close()
    return [line for line in b"".join(output).decode().splitlines() if "uvicorn.access" in line]


@pytest.mark.parametrize(("flags", "statuses"), [
    (["--access-log", "all"], ["200", "200", "200", "404"]),
    (["--access-log", "errors"], ["404"]),
    ([], ["404"]),
    (["--access-log", "off"], []),
], ids=["all", "errors", "default-errors", "off"])
def test_the_access_log_keeps_the_lines_its_mode_asks_for(
        flags: list[str], statuses: list[str], tmp_path: Path) -> None:
    lines = _access_lines(flags, tmp_path)
    assert [line.rsplit(" ", 1)[1] for line in lines] == statuses


def test_the_access_mode_is_read_from_the_configuration_file(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[logging]\naccess = "all"\n')
    assert len(_access_lines(["--config", str(config)], tmp_path)) == 4
