"""``toolkeeper serve`` and its sealing keys, as real processes over stdio: a configured key
lets a second process continue a paged ``tools/list`` the first began; without one the
gateway says once that its key is ephemeral; a bad key exits 2 without echoing it."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

COMMAND = [sys.executable, "-m", "toolkeeper.cli.serve_cmd"]
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
KEY = base64.b64encode(bytes(range(32))).decode()
EPHEMERAL = "no sealing key configured"


def _serve(tmp_path: Path, env: dict[str, str], *messages: dict[str, Any]
           ) -> tuple[int, list[dict[str, Any]], str]:
    config = tmp_path / "gateway.toml"
    config.write_text("[server]\nlist_page_size = 1\n")
    environ = {k: v for k, v in os.environ.items() if k != "TOOLKEEPER_SEALING_KEYS"}
    done = subprocess.run(
        [*COMMAND, "--config", str(config), "--demo", "--stdio", "--registry",
         f"sqlite:///{tmp_path / 'registry.db'}"],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in messages), capture_output=True,
        timeout=60, env={**environ, **env}, check=False)
    return (done.returncode, [json.loads(line) for line in done.stdout.splitlines()],
            done.stderr.decode())


def _list(request_id: int, cursor: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"_meta": ENVELOPE}
    if cursor is not None:
        params["cursor"] = cursor
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}


def test_a_second_process_with_the_same_key_continues_the_walk(tmp_path: Path) -> None:
    env = {"TOOLKEEPER_SEALING_KEYS": KEY}
    code, out, err = _serve(tmp_path, env, _list(1))
    assert code == 0 and EPHEMERAL not in err
    assert [t["name"] for t in out[0]["result"]["tools"]] == ["db.query"]
    code, out, _ = _serve(tmp_path, env, _list(2, out[0]["result"]["nextCursor"]))
    assert code == 0 and [t["name"] for t in out[0]["result"]["tools"]] == ["payments.lookup"]


def test_without_a_key_the_gateway_says_once_that_its_key_is_ephemeral(tmp_path: Path) -> None:
    code, out, err = _serve(tmp_path, {}, _list(1))
    assert code == 0 and err.count(EPHEMERAL) == 1
    cursor = out[0]["result"]["nextCursor"]
    code, out, _ = _serve(tmp_path, {}, _list(2, cursor))  # another process, another key
    assert out[0]["error"]["data"]["reason"] == "unsealable"


@pytest.mark.parametrize("value", ["", "c2hvcnQ=", f"{KEY},not-base64!"],
                         ids=["empty", "short", "second-junk"])
def test_a_bad_key_in_the_environment_exits_2_without_echoing_it(tmp_path: Path,
                                                                  value: str) -> None:
    code, out, err = _serve(tmp_path, {"TOOLKEEPER_SEALING_KEYS": value}, _list(1))
    assert code == 2 and out == []
    assert "[config.bad_value]" in err and "sealing.keys_env" in err
    assert KEY not in err and "not-base64!" not in err and "Traceback" not in err
