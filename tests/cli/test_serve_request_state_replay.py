"""Two ``toolkeeper serve`` processes sharing a SQLite registry and a sealing key: a write
tool's completed ``requestState`` replayed to either process is refused ``replayed`` and the
tool's effect happened once; a read tool's state resumes on both; the lifetime a state is
sealed for is ``[sealing] request_state_ttl_s`` from the configuration file."""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

import pytest

from toolkeeper.protocol.sealing import Sealer

ROOT = Path(__file__).resolve().parents[2]
KEY_BYTES = bytes(range(32))
KEY = base64.b64encode(KEY_BYTES).decode()
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
CONFIRM = {"confirm": {"action": "accept", "content": {"name": "yes"}}}
TTL_S = 42.0

HANDLERS = '''
from pathlib import Path

from toolkeeper.server import ToolHandlers

EFFECTS = Path(__file__).with_name("effects.txt")
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _tool(name):
    async def tool(arguments, ctx):
        await ctx.elicit("Go ahead?", SCHEMA, key="confirm")
        with EFFECTS.open("a") as out:
            out.write(name + "\\n")
        return name + " done"
    return tool


HANDLERS = ToolHandlers()
HANDLERS.bind("ledger_append", _tool("ledger_append"))
HANDLERS.bind("ledger_peek", _tool("ledger_peek"))
'''


def _contract(name: str, side_effect: str) -> dict[str, Any]:
    return {"name": name, "version": "1.0.0", "title": name, "description": f"The {name} tool.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "dataClassification": "internal", "sideEffect": side_effect}


@pytest.fixture
def setup(tmp_path: Path) -> Path:
    estate = tmp_path / "estate"
    estate.mkdir()
    for name, side_effect in (("ledger_append", "write"), ("ledger_peek", "read")):
        (estate / f"{name}.json").write_text(json.dumps(_contract(name, side_effect)))
    (tmp_path / "effects_handlers.py").write_text(HANDLERS)
    (tmp_path / "gateway.toml").write_text(f"[sealing]\nrequest_state_ttl_s = {TTL_S}\n")
    return tmp_path


def _command(setup: Path) -> list[str]:
    return [sys.executable, "-m", "toolkeeper", "serve", "--stdio",
            "--config", str(setup / "gateway.toml"),
            "--registry", f"sqlite:///{setup / 'registry.db'}",
            "--estate", str(setup / "estate"),
            "--handlers", f"{setup / 'effects_handlers.py'}:HANDLERS"]


def _environ() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "TOOLKEEPER_SEALING_KEYS"}
    return {**environ, "TOOLKEEPER_SEALING_KEYS": KEY}


def _call(request_id: int, name: str, **retry: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {"n": 1}, "_meta": META, **retry}}


class _Process:
    """A long-lived ``serve --stdio``: one request line in, its reply line out."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc = proc
        self.log = log

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
        except BrokenPipeError:  # the server exited: its log says why
            raise AssertionError(f"serve exited {self.proc.wait(timeout=30)}: "
                                 f"{self.log.read_text()}") from None
        return _read_reply(stdout)

    def ready(self) -> _Process:
        """This process once it answers a request (``ping``, which this era does not have:
        -32601 is an answer): its start-up (migrations, the estate's publish) is over, so a
        second process starting now does not overlap it."""
        assert self.ask({"jsonrpc": "2.0", "id": 0, "method": "ping",
                         "params": {"_meta": META}})["id"] == 0
        return self


def _read_reply(stdout: IO[bytes]) -> dict[str, Any]:
    ready, _, _ = select.select([stdout], [], [], 60)
    assert ready, "no reply within 60 s"
    reply = json.loads(stdout.readline())
    assert isinstance(reply, dict)
    return reply


@contextmanager
def _serving(setup: Path, after: _Process | None = None) -> Iterator[_Process]:
    """A ``serve --stdio`` process; ``after``: started once that one answers a request, so
    the two start-ups (migrations, the estate's publish) never overlap."""
    if after is not None:
        after.ready()
    log = setup / f"serve-{len(list(setup.glob('serve-*.log')))}.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(_command(setup), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, cwd=ROOT, env=_environ())
    try:
        yield _Process(proc, log)
    finally:
        assert proc.stdin is not None
        with suppress(BrokenPipeError):  # an exited server: the returncode check says so
            proc.stdin.close()  # end of input: the server exits 0
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
        assert proc.returncode == 0, log.read_text()


def _effects(setup: Path) -> list[str]:
    path = setup / "effects.txt"
    return path.read_text().split() if path.exists() else []


def _seal_reason(reply: dict[str, Any]) -> str:
    error = reply["error"]
    assert error["code"] == -32602, reply
    assert error["data"]["reason"] == "invalid_request_state"
    reason = error["data"]["sealReason"]
    assert isinstance(reason, str)
    return reason


def test_a_write_state_replayed_to_a_second_process_is_replayed_and_ran_once(
        setup: Path) -> None:
    with _serving(setup) as one, _serving(setup, after=one) as other:
        first = one.ask(_call(1, "ledger_append"))["result"]
        assert first["resultType"] == "input_required"
        state = first["requestState"]
        done = one.ask(_call(2, "ledger_append", requestState=state,
                             inputResponses=CONFIRM))["result"]
        assert done["content"] == [{"type": "text", "text": "ledger_append done"}]
        assert _seal_reason(other.ask(_call(3, "ledger_append", requestState=state,
                                            inputResponses=CONFIRM))) == "replayed"
        assert _seal_reason(one.ask(_call(4, "ledger_append", requestState=state,
                                          inputResponses=CONFIRM))) == "replayed"
    assert _effects(setup) == ["ledger_append"]


def test_a_read_state_resumes_again_on_either_process(setup: Path) -> None:
    with _serving(setup) as one, _serving(setup, after=one) as other:
        state = one.ask(_call(1, "ledger_peek"))["result"]["requestState"]
        for request_id, process in enumerate((one, other, other), start=2):
            done = process.ask(_call(request_id, "ledger_peek", requestState=state,
                                     inputResponses=CONFIRM))["result"]
            assert done["content"] == [{"type": "text", "text": "ledger_peek done"}]
    assert _effects(setup) == ["ledger_peek"] * 3


def test_states_are_sealed_for_the_configured_lifetime(setup: Path) -> None:
    with _serving(setup) as one:
        before = time.time()
        state = one.ask(_call(1, "ledger_append"))["result"]["requestState"]
        after = time.time()
    # The expiry sealed inside the state (read with the shared key; the binding is the
    # gateway's business, so the authenticated plaintext is read directly).
    expires_at = Sealer([KEY_BYTES])._decrypt(state)["e"]
    assert before + TTL_S <= expires_at <= after + TTL_S
