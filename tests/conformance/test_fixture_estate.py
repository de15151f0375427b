"""The conformance fixture estate (``examples/conformance/``) and the suite's baseline files.

The official suite itself runs in ``conformance/run.sh`` (CI); these tests pin what the suite
relies on without Node: the tool names it calls, the reference's exact 2020-12 schema, each
fixture tool's answer in both eras over real HTTP, serving the estate with
``toolkeeper serve --estate DIR --handlers FILE.py:ATTR``, and the expected-failures files
(one reason per entry, none of the scenarios the gateway must pass)."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers, build_app
from toolkeeper.transports import serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
ESTATE = ROOT / "examples" / "conformance"
CONTRACTS = ESTATE / "contracts"
BASELINES = {era: ROOT / "conformance" / f"expected-failures-{era}.yml" for era in ("2026", "2025")}
ACCEPT = "application/json, text/event-stream"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}

SUITE_TOOLS = {
    # both eras
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_error_handling", "test_tool_with_progress",
    "json_schema_2020_12_tool",
    # 2025-11-25
    "test_tool_with_logging",
    # 2026-07-28 (server-stateless, http-custom-header-server-validation)
    "test_missing_capability", "test_logging_tool", "test_streaming_elicitation",
    "test_trigger_tool_change", "test_custom_header",
    # tools that ask back: input-required-result-* (2026-07-28); tools-call-sampling,
    # tools-call-elicitation, elicitation-sep1034-defaults, elicitation-sep1330-enums (2025)
    "test_input_required_result_elicitation", "test_input_required_result_sampling",
    "test_input_required_result_list_roots", "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state", "test_input_required_result_capabilities",
    "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
}
"""Every tool name the suite calls, but for prompts, resources and SSE resumption, which the
gateway does not offer."""

MUST_PASS = {
    "server-stateless", "tools-list", "tools-call-simple-text", "tools-call-image",
    "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
    "tools-call-error", "tools-call-with-progress", "json-schema-2020-12",
    "http-header-validation", "http-custom-header-server-validation",
    "dns-rebinding-protection", "server-sse-multiple-streams", "server-initialize", "ping",
    "tools-call-with-logging", "server-session-lifecycle",
    "input-required-result-basic-elicitation", "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots", "input-required-result-request-state",
    "input-required-result-multiple-input-requests", "input-required-result-multi-round",
    "input-required-result-missing-input-response", "input-required-result-result-type",
    "input-required-result-tampered-state", "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
}

REFERENCE_2020_12_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def load_handlers_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_fixture_handlers",
                                                  ESTATE / "handlers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contracts() -> dict[str, dict[str, Any]]:
    return {path.stem: loads_json(path.read_bytes()) for path in sorted(CONTRACTS.glob("*.json"))}


def install(registry: Registry) -> None:
    for data in contracts().values():
        registry.publish(spec_from_mapping(data))


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    registry = Registry.open("memory:")
    install(registry)
    handlers: ToolHandlers = load_handlers_module().HANDLERS
    app, _ = build_app(registry, handlers)
    with serve_in_thread(app) as running:
        yield running.url
    registry.close()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


def sse_or_json(response: httpx.Response) -> list[dict[str, Any]]:
    if response.headers["content-type"] == "application/json":
        return [response.json()]
    return [json.loads(line[6:]) for line in response.text.split("\r\n")
            if line.startswith("data: ")]


def modern(client: httpx.Client, url: str, method: str, params: dict[str, Any],
           meta: dict[str, Any] | None = None, **extra_headers: str) -> list[dict[str, Any]]:
    headers = {"Accept": ACCEPT, "Content-Type": "application/json",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, **extra_headers}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {**params, "_meta": {**ENVELOPE, **(meta or {})}}}
    return sse_or_json(client.post(url, content=json.dumps(body), headers=headers))


class LegacySession:
    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client, self.url = client, url
        init = self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "estate-test", "version": "1"}}}, None)
        self.session_id = init.headers["mcp-session-id"]
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.session_id)

    def _post(self, body: dict[str, Any], session_id: str | None) -> httpx.Response:
        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if session_id is not None:
            headers |= {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
        return self.client.post(self.url, content=json.dumps(body), headers=headers)

    def request(self, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return sse_or_json(self._post(body, self.session_id))


# --- the estate as files ---------------------------------------------------------------------

def test_every_contract_file_is_named_after_its_tool_and_has_a_handler() -> None:
    specs = {stem: spec_from_mapping(data) for stem, data in contracts().items()}
    assert all(stem == spec.name for stem, spec in specs.items())
    handlers: ToolHandlers = load_handlers_module().HANDLERS
    assert [name for name, spec in specs.items()
            if handlers.lookup(name, spec.version) is None] == []


def test_the_estate_exposes_every_tool_name_the_passing_scenarios_call() -> None:
    assert set(contracts()) >= SUITE_TOOLS


def test_the_2020_12_tool_advertises_exactly_the_reference_schema() -> None:
    assert contracts()["json_schema_2020_12_tool"]["inputSchema"] == REFERENCE_2020_12_SCHEMA


def test_the_custom_header_tool_mirrors_region_into_a_header() -> None:
    region = contracts()["test_custom_header"]["inputSchema"]["properties"]["region"]
    assert (region["type"], region["x-mcp-header"]) == ("string", "Region")


# --- the estate served, both eras -------------------------------------------------------------

def test_the_first_listed_tool_accepts_empty_arguments(client: httpx.Client, url: str) -> None:
    [listed] = modern(client, url, "tools/list", {})
    first = listed["result"]["tools"][0]["name"]
    [called] = modern(client, url, "tools/call", {"name": first, "arguments": {}})
    assert called["result"]["isError"] is False


PNG_MAGIC = b"\x89PNG"
EXPECTED_CONTENT: dict[str, list[tuple[str, Any]]] = {
    "test_simple_text": [("text", "This is a simple text response for testing.")],
    "test_image_content": [("image", ("image/png", PNG_MAGIC))],
    "test_audio_content": [("audio", ("audio/wav", b"RIFF"))],
    "test_embedded_resource": [("resource", ("test://embedded-resource",
                                             "This is an embedded resource content."))],
    "test_multiple_content_types": [
        ("text", "Multiple content types test:"), ("image", ("image/png", PNG_MAGIC)),
        ("resource", ("test://mixed-content-resource", '{"test": "data", "value": 123}'))],
}


def summarize(block: dict[str, Any]) -> tuple[str, Any]:
    kind = block["type"]
    if kind == "text":
        return kind, block["text"]
    if kind in ("image", "audio"):
        return kind, (block["mimeType"], base64.b64decode(block["data"])[:len(
            PNG_MAGIC if kind == "image" else b"RIFF")])
    return kind, (block["resource"]["uri"], block["resource"]["text"])


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("name", sorted(EXPECTED_CONTENT))
def test_content_tools_answer_like_the_reference_in_both_eras(
        client: httpx.Client, url: str, era: str, name: str) -> None:
    params = {"name": name, "arguments": {}}
    messages = (modern(client, url, "tools/call", params) if era == "modern"
                else LegacySession(client, url).request("tools/call", params))
    result = messages[-1]["result"]
    assert result["isError"] is False
    assert [summarize(block) for block in result["content"]] == EXPECTED_CONTENT[name]


def test_the_error_tool_is_an_error_result_not_a_protocol_error(client: httpx.Client,
                                                                url: str) -> None:
    [reply] = modern(client, url, "tools/call", {"name": "test_error_handling"})
    assert reply["result"]["isError"] is True
    assert reply["result"]["content"][0]["text"] == (
        "This tool intentionally returns an error for testing")


def test_progress_streams_three_increasing_notifications_before_the_result(
        client: httpx.Client, url: str) -> None:
    messages = modern(client, url, "tools/call", {"name": "test_tool_with_progress"},
                      {"progressToken": "p1"})
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
        ("p1", 0, 100), ("p1", 50, 100), ("p1", 100, 100)]
    assert messages[-1]["result"]["content"][0]["text"] == "progress done"


def test_logs_reach_a_legacy_session_after_set_level_and_a_modern_call_only_with_log_level(
        client: httpx.Client, url: str) -> None:
    session = LegacySession(client, url)
    session.request("logging/setLevel", {"level": "debug"})
    messages = session.request("tools/call", {"name": "test_tool_with_logging"})
    assert [m["params"]["data"] for m in messages if m.get("method") == "notifications/message"
            ] == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    silent = modern(client, url, "tools/call", {"name": "test_logging_tool"})
    assert [m.get("method") for m in silent] == [None]
    loud = modern(client, url, "tools/call", {"name": "test_logging_tool"},
                  {"io.modelcontextprotocol/logLevel": "info"})
    assert [m["params"]["data"] for m in loud if m.get("method") == "notifications/message"
            ] == ["log message 1", "log message 2"]


def test_the_capability_tool_is_minus_32021_without_sampling_and_runs_with_it(
        client: httpx.Client, url: str) -> None:
    [refused] = modern(client, url, "tools/call", {"name": "test_missing_capability"})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    [ran] = modern(client, url, "tools/call", {"name": "test_missing_capability"},
                   {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}})
    assert ran["result"]["content"][0]["text"] == "sampling capability declared"


def test_the_streaming_tool_sends_only_notifications_before_its_result(
        client: httpx.Client, url: str) -> None:
    messages = modern(client, url, "tools/call", {"name": "test_streaming_elicitation"},
                      {"progressToken": 1})
    assert [m.get("method", "result" if "result" in m else "?") for m in messages] == [
        "notifications/progress", "result"]


def test_the_custom_header_tool_needs_its_param_header(client: httpx.Client, url: str) -> None:
    params = {"name": "test_custom_header", "arguments": {"region": "Zürich"}}
    [refused] = modern(client, url, "tools/call", params)
    assert refused["error"]["code"] == -32020
    [ran] = modern(client, url, "tools/call", params,
                   **{"Mcp-Param-Region": "=?base64?WsO8cmljaA==?="})
    assert ran["result"]["content"][0]["text"] == "region=Zürich"


def test_the_multi_round_tool_takes_two_input_required_rounds_over_http(
        client: httpx.Client, url: str) -> None:
    params: dict[str, Any] = {"name": "test_input_required_result_multi_round",
                              "arguments": {}}
    caps = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    [first] = modern(client, url, "tools/call", params, caps)
    assert list(first["result"]["inputRequests"]) == ["step1"]
    [second] = modern(client, url, "tools/call", {
        **params, "requestState": first["result"]["requestState"],
        "inputResponses": {"step1": {"action": "accept", "content": {"name": "Ada"}}}}, caps)
    assert list(second["result"]["inputRequests"]) == ["step2"]
    [done] = modern(client, url, "tools/call", {
        **params, "requestState": second["result"]["requestState"],
        "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}}}, caps)
    assert done["result"]["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "multi-round complete: Ada likes blue"


def test_the_capabilities_tool_asks_only_for_what_the_caller_declared(
        client: httpx.Client, url: str) -> None:
    [reply] = modern(client, url, "tools/call",
                     {"name": "test_input_required_result_capabilities", "arguments": {}},
                     {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}})
    assert {k: r["method"] for k, r in reply["result"]["inputRequests"].items()} == {
        "sample": "sampling/createMessage"}


# --- serving the estate from a clean clone ----------------------------------------------------

def serve_stdio(args: list[str], stdin: bytes) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        [sys.executable, "-m", "toolkeeper", "serve", "--stdio", "--log-level", "info", *args],
        input=stdin, capture_output=True, timeout=60, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ""})
    return (done.returncode, [json.loads(line) for line in done.stdout.splitlines()],
            done.stderr.decode())


def test_serve_publishes_the_estate_once_and_serves_it_with_handlers_from_a_file(
        tmp_path: Path) -> None:
    args = ["--registry", f"sqlite:///{tmp_path / 'registry.db'}",
            "--estate", "examples/conformance/contracts",
            "--handlers", "examples/conformance/handlers.py:HANDLERS"]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "test_simple_text", "_meta": ENVELOPE}}
    code, out, err = serve_stdio(args, json.dumps(call).encode() + b"\n")
    assert code == 0
    assert out[0]["result"]["content"][0]["text"] == "This is a simple text response for testing."
    assert err.count("published ") == len(contracts())
    code, _, err = serve_stdio(args, b"")
    assert code == 0 and "published " not in err


@pytest.mark.parametrize(("args", "code"), [
    (["--handlers", "examples/conformance/missing.py:HANDLERS"], "cli.handlers_reference"),
    (["--handlers", "examples/conformance/handlers.py:NOPE"], "cli.handlers_reference"),
    (["--estate", "examples/conformance"], "cli.estate_empty"),  # handlers only, no contracts
    (["--estate", "{bad}"], "contract.missing_key"),
])
def test_serve_refuses_a_bad_handlers_file_or_estate_with_exit_2(
        tmp_path: Path, args: list[str], code: str) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "not-a-contract.json").write_text('{"name": "x"}')
    args = [arg.format(bad=bad) for arg in args]
    status, _, err = serve_stdio(["--registry", f"sqlite:///{tmp_path / 'r.db'}", *args], b"")
    assert status == 2
    assert f"[{code}]" in err


# --- the suite's baseline files ---------------------------------------------------------------

@pytest.mark.parametrize("era", sorted(BASELINES))
def test_every_expected_failure_carries_a_reason_and_no_required_scenario_is_excused(
        era: str) -> None:
    text = BASELINES[era].read_text()
    entries = yaml.safe_load(text)["server"]
    assert entries and len(entries) == len(set(entries))
    for entry in entries:
        [line] = [line for line in text.splitlines()
                  if re.match(rf"\s*- {re.escape(entry)}\s+#\s*\S", line)]
        assert line
    assert not {entry.split(":")[0] for entry in entries} & MUST_PASS
