"""A stdio server's principal comes from ``[auth.stdio]`` in the configuration file (else the
anonymous local principal, who sees the whole estate); its log lines follow
``logging.format``. Real processes, bounded waits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

COMMAND = [sys.executable, "-m", "toolkeeper.cli.serve_cmd"]
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}


def _serve(tmp_path: Path, text: str) -> tuple[list[str], list[dict[str, Any]]]:
    config = tmp_path / "gateway.toml"
    config.write_text(f'[registry]\nurl = "sqlite:///{tmp_path / "r.db"}"\n'
                      f'[estate]\ndemo = true\n[server]\ntransport = "stdio"\n{text}')
    done = subprocess.run([*COMMAND, "--config", str(config)],
                          input=json.dumps(LIST).encode() + b"\n", capture_output=True,
                          timeout=60, check=True)
    tools = json.loads(done.stdout.splitlines()[0])["result"]["tools"]
    return sorted(tool["name"] for tool in tools), [
        json.loads(line) for line in done.stderr.splitlines() if line.startswith(b"{")]


def test_the_configured_stdio_principal_sees_only_its_entitled_tools(tmp_path: Path) -> None:
    names, _ = _serve(tmp_path, '[auth.stdio]\ntenant = "acme"\nscopes = ["db.query"]\n'
                                'clearance = "internal"\n')
    assert names == ["db.query"]


def test_without_a_stdio_table_the_anonymous_local_principal_sees_the_estate(
        tmp_path: Path) -> None:
    names, _ = _serve(tmp_path, "")
    assert names == ["db.query", "payments.lookup", "tickets.create"]


def test_json_log_format_from_the_file_writes_json_lines_on_stderr(tmp_path: Path) -> None:
    _, entries = _serve(tmp_path, '[logging]\nformat = "json"\n')
    assert any(entry["message"] == "serving on stdio" for entry in entries)
    assert all(entry["logger"].startswith(("toolkeeper", "uvicorn")) for entry in entries)
