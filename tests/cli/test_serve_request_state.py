"""``toolkeeper serve`` processes sharing a sealing key resume each other's ``input_required``
calls: the round one process answers, another completes; a process with another key refuses
the state as ``unsealable`` before the tool runs."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TOOL = "test_input_required_result_elicitation"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
KEY = base64.b64encode(bytes(range(32))).decode()
OTHER_KEY = base64.b64encode(bytes(range(1, 33))).decode()


def _serve(tmp_path: Path, key: str, message: dict[str, Any]) -> dict[str, Any]:
    environ = {k: v for k, v in os.environ.items() if k != "TOOLKEEPER_SEALING_KEYS"}
    done = subprocess.run(
        [sys.executable, "-m", "toolkeeper", "serve", "--stdio",
         "--registry", f"sqlite:///{tmp_path / 'registry.db'}",
         "--estate", "examples/conformance/contracts",
         "--handlers", "examples/conformance/handlers.py:HANDLERS"],
        input=json.dumps(message).encode() + b"\n", capture_output=True, timeout=60,
        cwd=ROOT, env={**environ, "TOOLKEEPER_SEALING_KEYS": key}, check=False)
    assert done.returncode == 0, done.stderr.decode()
    [reply] = [json.loads(line) for line in done.stdout.splitlines()]
    assert isinstance(reply, dict)
    return reply


def _call(request_id: int, **retry: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": TOOL, "arguments": {}, "_meta": META, **retry}}


def test_a_call_begun_on_one_process_completes_on_another_with_the_same_key(
        tmp_path: Path) -> None:
    first = _serve(tmp_path, KEY, _call(1))["result"]
    assert first["resultType"] == "input_required"
    done = _serve(tmp_path, KEY, _call(2, requestState=first["requestState"], inputResponses={
        "user_name": {"action": "accept", "content": {"name": "Ada"}}}))["result"]
    assert done["content"] == [{"type": "text", "text": "Hello, Ada!"}]


def test_a_process_with_another_key_refuses_the_state_as_unsealable(tmp_path: Path) -> None:
    first = _serve(tmp_path, KEY, _call(1))["result"]
    error = _serve(tmp_path, OTHER_KEY, _call(2, requestState=first["requestState"],
                                              inputResponses={}))["error"]
    assert error["code"] == -32602
    assert (error["data"]["reason"], error["data"]["sealReason"]) == (
        "invalid_request_state", "unsealable")
