"""``toolkeeper serve --stdio`` closes the processes of its stdio upstreams on its own event loop
before that loop ends: after a forwarded call and the end of its input it exits 0 with nothing
but log lines on its standard error (no "Event loop is closed" traceback from a subprocess
transport the loop left behind), and the upstream's process is gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from process_kit import SRC

SDK_UPSTREAM = Path(__file__).resolve().parent / "sdk_upstream.py"
RUNS = 3
"""Runs of the gateway: the leftover transport showed in most runs, not in every one."""


def _lines(*messages: dict[str, object]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def test_a_stdio_gateway_ends_its_stdio_upstream_on_its_loop(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[registry]\nurl = "sqlite:///{tmp_path / "registry.db"}"\n\n'
        f'[[upstreams]]\nname = "sdk"\ncommand = {json.dumps([sys.executable, str(SDK_UPSTREAM), "stdio"])}\n'
        'prefix = "sdk."\n', encoding="utf-8")
    messages = _lines(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "sdk.pid", "arguments": {}}})
    env = {**os.environ, "PYTHONPATH": SRC}
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, "-m", "toolkeeper", "serve", "--stdio", "--config",
                               str(config)], input=messages, capture_output=True, timeout=120,
                              env=env, check=False)
        errors = done.stderr.decode(errors="replace")
        assert done.returncode == 0, errors
        assert "Traceback" not in errors and "Exception ignored" not in errors, errors
        answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        [called] = [a for a in answers if a.get("id") == 2]
        assert called["result"]["isError"] is False
        pid = called["result"]["structuredContent"]["result"]
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
