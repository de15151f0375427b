"""Kit for end-to-end tests that load a real ``toolkeeper serve`` process over HTTP while the
registry changes under it: start and stop a gateway process, speak both protocol eras with
httpx, check every reply for well-formedness, and derive new contract versions.

Every wait is bounded (read timeouts on the HTTP client, deadlines on process waits)."""

from __future__ import annotations

import copy
import itertools
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from process_kit import read_until
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping, spec_to_mapping

__all__ = [
    "ACCEPT",
    "LEGACY",
    "MODERN",
    "READY",
    "Exchange",
    "GatewayProcess",
    "LegacyClient",
    "ModernClient",
    "derived",
    "sse_messages",
    "start_gateway",
    "stop_gateway",
]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
READY = re.compile(rb"toolkeeper gateway on (\S+/mcp)\n")
ENVELOPE: Mapping[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                               "io.modelcontextprotocol/clientCapabilities": {}}


@dataclass
class GatewayProcess:
    """A running ``toolkeeper serve``; its stderr is drained to ``log`` once it is ready."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path
    _drain: threading.Thread | None = None

    def stderr_text(self) -> str:
        return self.log.read_text(errors="replace")


def _drain(stream: IO[bytes], sink: Path) -> None:
    with sink.open("ab") as out:
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            out.write(chunk)
            out.flush()


def start_gateway(registry_url: str, log: Path, *extra: str, env: dict[str, str] | None = None,
                  timeout: float = 30.0) -> GatewayProcess:
    """``toolkeeper serve --demo`` on an ephemeral loopback port over ``registry_url``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkeeper", "serve", "--demo", "--registry", registry_url,
         "--port", "0", "--log-level", "warning", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    try:
        url = read_until(proc.stderr, READY, timeout).group(1).decode()
    except BaseException:
        proc.kill()
        proc.wait(timeout=10)
        proc.stderr.close()
        raise
    drain = threading.Thread(target=_drain, args=(proc.stderr, log), daemon=True)
    drain.start()
    return GatewayProcess(proc, url, log, drain)


def stop_gateway(gateway: GatewayProcess, timeout: float = 20.0) -> int | None:
    """SIGTERM, then wait at most ``timeout``; the exit code, or None when it had to be killed."""
    proc = gateway.proc
    if proc.poll() is None:
        proc.terminate()
    try:
        code: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        code = None
    if gateway._drain is not None:
        gateway._drain.join(timeout=5)
    if proc.stderr is not None:
        proc.stderr.close()
    return code


# --- replies ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One request and its reply: the HTTP status, the final JSON-RPC message, and the
    ``time.monotonic()`` readings taken just before sending and just after the reply."""

    sent: float
    received: float
    status: int
    message: dict[str, Any]
    notes: tuple[dict[str, Any], ...] = ()
    legacy: bool = False

    @property
    def answer_status(self) -> int:
        """The HTTP status of a -32602 answering this request: 400 in the modern era, 200 in
        the legacy era (mcp-wire 4.5 and 10)."""
        return 200 if self.legacy else 400

    @property
    def result(self) -> dict[str, Any]:
        result = self.message.get("result")
        assert isinstance(result, dict), self.message
        return result

    @property
    def error(self) -> dict[str, Any] | None:
        error = self.message.get("error")
        return error if isinstance(error, dict) else None


def sse_messages(chunks: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (keepalive comments skipped)."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            frame, buffer = buffer.split(b"\r\n\r\n", 1)
            if frame.startswith(b":"):
                continue
            lines = frame.split(b"\r\n")
            data = [line[5:].strip() for line in lines if line.startswith(b"data:")]
            assert data, frame
            yield json.loads(b"".join(data))


def _well_formed(response: httpx.Response, request_id: Any) -> tuple[dict[str, Any],
                                                                     tuple[dict[str, Any], ...]]:
    """The reply's final message (and notifications before it), checked: no 5xx, no
    traceback, JSON-RPC 2.0 with exactly one of result/error and the request's id."""
    body = response.content
    assert response.status_code < 500, (response.status_code, body[:500])
    assert b"Traceback" not in body, body[:2000]
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        messages = list(sse_messages(iter([body])))
    else:
        assert kind == "application/json", (response.status_code, kind, body[:500])
        messages = [json.loads(body)]
    assert messages, body
    final = messages[-1]
    assert final.get("jsonrpc") == "2.0", final
    assert final.get("id") == request_id, (request_id, final)
    assert ("result" in final) != ("error" in final), final
    if "error" in final:
        assert isinstance(final["error"].get("code"), int), final
    return final, tuple(messages[:-1])


class _Client:
    _ids = itertools.count(1)
    legacy = False

    def __init__(self, http: httpx.Client, url: str) -> None:
        self.http = http
        self.url = url
        self.last_session = ""

    def _post(self, body: dict[str, Any], headers: dict[str, str]) -> Exchange:
        sent = time.monotonic()
        response = self.http.post(self.url, content=json.dumps(body).encode(), headers=headers)
        received = time.monotonic()
        self.last_session = response.headers.get("mcp-session-id", "")
        message, notes = _well_formed(response, body["id"])
        return Exchange(sent, received, response.status_code, message, notes, self.legacy)

    def _next_id(self) -> int:
        return next(self._ids)


class ModernClient(_Client):
    """The 2026-07-28 era: a ``_meta`` envelope on every request, routing headers."""

    def _headers(self, method: str, name: str | None = None) -> dict[str, str]:
        out = {"Accept": ACCEPT, "Content-Type": "application/json",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            out["Mcp-Name"] = name
        return out

    def call(self, name: str, arguments: dict[str, Any], version: str | None = None
             ) -> Exchange:
        meta: dict[str, Any] = dict(ENVELOPE)
        if version is not None:
            meta["schemaVersion"] = version
        body = {"jsonrpc": "2.0", "id": self._next_id(), "method": "tools/call",
                "params": {"name": name, "arguments": arguments, "_meta": meta}}
        return self._post(body, self._headers("tools/call", name))

    def list(self) -> Exchange:
        body = {"jsonrpc": "2.0", "id": self._next_id(), "method": "tools/list",
                "params": {"_meta": dict(ENVELOPE)}}
        return self._post(body, self._headers("tools/list"))

    def listen_request(self, request_id: int) -> tuple[dict[str, Any], dict[str, str]]:
        body = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
                "params": {"_meta": dict(ENVELOPE), "notifications": {"toolsListChanged": True}}}
        return body, self._headers("subscriptions/listen")


class LegacyClient(_Client):
    """The 2025-11-25 era: ``initialize``, ``notifications/initialized``, then requests
    carrying ``Mcp-Session-Id``."""

    legacy = True

    def __init__(self, http: httpx.Client, url: str) -> None:
        super().__init__(http, url)
        init = self._post({"jsonrpc": "2.0", "id": self._next_id(), "method": "initialize",
                           "params": {"protocolVersion": LEGACY, "capabilities": {},
                                      "clientInfo": {"name": "load", "version": "1"}}},
                          {"Accept": ACCEPT, "Content-Type": "application/json"})
        assert init.result["protocolVersion"] == LEGACY
        self.session_id: str = self.last_session
        response = self.http.post(url, json={"jsonrpc": "2.0",
                                             "method": "notifications/initialized"},
                                  headers=self.headers())
        assert response.status_code == 202, response.text

    def headers(self, accept: str = ACCEPT) -> dict[str, str]:
        return {"Accept": accept, "Content-Type": "application/json",
                "Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": LEGACY}

    def call(self, name: str, arguments: dict[str, Any], version: str | None = None
             ) -> Exchange:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if version is not None:
            params["_meta"] = {"schemaVersion": version}
        return self._post({"jsonrpc": "2.0", "id": self._next_id(), "method": "tools/call",
                           "params": params}, self.headers())

    def list(self) -> Exchange:
        return self._post({"jsonrpc": "2.0", "id": self._next_id(), "method": "tools/list",
                           "params": {}}, self.headers())


# --- contracts -----------------------------------------------------------------------------------


def derived(spec: ToolSpec, version: str, *, add_property: str | None = None,
            drop_property: str | None = None) -> ToolSpec:
    """A new version of ``spec`` (a deep copy: ``spec_to_mapping`` shares the schema dicts),
    with an optional property added (MINOR) or a property removed (MAJOR)."""
    data = copy.deepcopy(spec_to_mapping(spec, lifecycle=False))
    data["version"] = version
    properties = data["inputSchema"]["properties"]
    if add_property is not None:
        properties[add_property] = {"type": "string"}
    if drop_property is not None:
        del properties[drop_property]
    return spec_from_mapping(data)
