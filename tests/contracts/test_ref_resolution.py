"""Contracts are self-contained: a ``$ref``/``$dynamicRef`` resolves inside its own document or
the schema is refused where it enters (contract parsing, ``compile_schema``), with a stable code
and the JSON path of the reference; the validator itself can never retrieve anything, so a
schema that skips the check still reads no file and opens no connection. Reference cycles that
never descend into the instance, references to nothing, and unknown formats under
``assertFormats`` are refused the same way."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from ref_hosts import schema_host
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.spec import spec_from_mapping, spec_to_mapping
from toolkeeper.contracts.validate import CompiledSchema, compile_schema, validate
from toolkeeper.errors import ContractError, SchemaError, ToolkeeperError
from toolkeeper.protocol import Reply, ServerKernel, decode_message
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import ToolHandlers, build_gateway, fixed_principal

SECRET = ["s3cr3t-alpha", "s3cr3t-beta"]


@pytest.fixture
def secret_uri(tmp_path: Path) -> str:
    path = tmp_path / "any.json"
    path.write_text(canonical_json({"enum": SECRET}).decode())
    return path.as_uri()


def contract(input_schema: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": "lookup", "version": "1.0.0", "title": "Lookup", "description": "Looks up.",
            "inputSchema": input_schema, "dataClassification": "internal", "sideEffect": "read",
            **fields}


def with_x(schema: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": schema}, **root}


def refusal(data: dict[str, Any]) -> ContractError:
    with pytest.raises(ContractError) as caught:
        spec_from_mapping(data)
    return caught.value


# ------------------------------------------------------------------ references to other documents

def test_a_file_ref_is_refused_at_parse_with_its_path_and_the_file_is_never_read(
        secret_uri: str) -> None:
    error = refusal(contract(with_x({"$ref": secret_uri})))
    assert (error.code, error.path) == ("contract.schema_ref_external",
                                        '$.inputSchema.properties.x["$ref"]')
    assert not any(s in str(error.to_dict()) for s in SECRET)


def test_an_http_ref_is_refused_at_parse_and_the_host_sees_no_connection() -> None:
    with schema_host() as host:
        error = refusal(contract(with_x({"$ref": f"{host.url}/s.json"})))
        assert (error.code, error.path) == ("contract.schema_ref_external",
                                            '$.inputSchema.properties.x["$ref"]')
        assert host.connections == 0


@pytest.mark.parametrize(("schema", "path"), [
    (with_x({"$ref": "urn:example:thing"}), '$.inputSchema.properties.x["$ref"]'),
    (with_x({"$ref": "other.json#/$defs/a"}), '$.inputSchema.properties.x["$ref"]'),
    (with_x({"$ref": "https://json-schema.org/draft/2020-12/schema"}),
     '$.inputSchema.properties.x["$ref"]'),
    (with_x({"$dynamicRef": "https://example.com/d.json#meta"}),
     '$.inputSchema.properties.x["$dynamicRef"]'),
    (with_x({"$ref": "other.json"}, **{"$id": "https://example.com/root.json"}),
     '$.inputSchema.properties.x["$ref"]'),
    (with_x({"$id": "https://example.com/inner.json", "$ref": "sibling.json"}),
     '$.inputSchema.properties.x["$ref"]'),
    ({"type": "object", "$defs": {"unused": {"$ref": "https://example.com/u.json"}}},
     '$.inputSchema["$defs"].unused["$ref"]'),
    ({"type": "object", "x-doc": {"$ref": "file:///etc/hostname"}},
     '$.inputSchema["x-doc"]["$ref"]'),
    ({"type": "object", "allOf": [{"$ref": "#/enum/0"}], "enum": [{"$ref": "urn:hidden"}]},
     '$.inputSchema.enum[0]["$ref"]'),
])
def test_every_reference_outside_the_document_is_refused_with_its_path(
        schema: dict[str, Any], path: str) -> None:
    error = refusal(contract(schema))
    assert (error.code, error.path) == ("contract.schema_ref_external", path)


def test_an_output_schema_ref_is_refused_at_its_own_path(secret_uri: str) -> None:
    error = refusal(contract({"type": "object"}, outputSchema={"$ref": secret_uri}))
    assert (error.code, error.path) == ("contract.schema_ref_external",
                                        '$.outputSchema["$ref"]')


# ------------------------------------------------------------------ references inside the document

@pytest.mark.parametrize("schema", [
    {"type": "object", "$defs": {"s": {"type": "string"}},
     "properties": {"x": {"$ref": "#/$defs/s"}}},
    {"type": "object", "$defs": {"s": {"$anchor": "str", "type": "string"}},
     "properties": {"x": {"$ref": "#str"}}},
    {"$id": "https://example.com/s.json", "type": "object", "$defs": {"s": {"type": "string"}},
     "properties": {"x": {"$ref": "https://example.com/s.json#/$defs/s"}}},
    {"$id": "https://example.com/s.json", "type": "object", "$defs": {"s": {"type": "string"}},
     "properties": {"x": {"$ref": "s.json#/$defs/s"}}},
    {"$id": "urn:example:root", "type": "object", "$defs": {"s": {"type": "string"}},
     "properties": {"x": {"$ref": "urn:example:root#/$defs/s"}}},
    {"$id": "https://example.com/root.json", "type": "object",
     "$defs": {"b": {"$id": "b.json", "$defs": {"s": {"type": "string"}}}},
     "properties": {"x": {"$ref": "b.json#/$defs/s"}}},
    {"type": "object", "$defs": {"b": {"$id": "https://example.com/b.json", "type": "string",
                                       "$defs": {"s": {"$ref": "#"}}}},
     "properties": {"x": {"$ref": "https://example.com/b.json#/$defs/s"}}},
    {"type": "object", "$dynamicAnchor": "node", "properties": {"x": {"type": "string"},
                                                              "next": {"$dynamicRef": "#node"}}},
    {"type": "object", "properties": {"x": {"type": "string"},
                                      "children": {"type": "array", "items": {"$ref": "#"}}}},
])
def test_references_that_land_inside_the_document_are_accepted_and_followed(
        schema: dict[str, Any]) -> None:
    spec = spec_from_mapping(contract(schema))
    assert [i.path for i in validate(spec.input_schema, {"x": 5})] == ["$.x"]
    assert validate(spec.input_schema, {"x": "ok"}) == []


@pytest.mark.parametrize(("schema", "path"), [
    (with_x({"$ref": "#/$defs/missing"}), '$.inputSchema.properties.x["$ref"]'),
    (with_x({"$ref": "#no-such-anchor"}), '$.inputSchema.properties.x["$ref"]'),
    (with_x({"$ref": "#/properties/y"}), '$.inputSchema.properties.x["$ref"]'),
    ({"type": "object", "$id": "https://example.com/s.json",
      "properties": {"x": {"$ref": "s.json#/$defs/gone"}}}, '$.inputSchema.properties.x["$ref"]'),
])
def test_a_reference_to_nothing_in_the_document_is_refused_with_its_path(
        schema: dict[str, Any], path: str) -> None:
    error = refusal(contract(schema))
    assert (error.code, error.path) == ("contract.schema_ref_unresolved", path)


@pytest.mark.parametrize(("schema", "path"), [
    ({"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
     '$.inputSchema["$defs"].a["$ref"]'),
    ({"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
      "properties": {"x": {"$ref": "#/$defs/a"}}}, '$.inputSchema["$defs"].b["$ref"]'),
    ({"type": "object", "$defs": {"a": {"allOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}},
      "properties": {"x": {"$ref": "#/$defs/a"}}}, '$.inputSchema["$defs"].a.allOf[1]["$ref"]'),
    ({"type": "object", "not": {"not": {"$ref": "#"}}}, '$.inputSchema.not.not["$ref"]'),
])
def test_a_reference_cycle_that_never_descends_into_the_instance_is_refused(
        schema: dict[str, Any], path: str) -> None:
    error = refusal(contract(schema))
    assert (error.code, error.path) == ("contract.schema_ref_cycle", path)


def test_an_unreached_cycle_is_refused_too() -> None:
    schema = {"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    error = refusal(contract(schema))
    assert (error.code, error.path) == ("contract.schema_ref_cycle",
                                        '$.inputSchema["$defs"].a["$ref"]')


# ------------------------------------------------------------------ formats

def test_an_unknown_format_is_refused_when_formats_are_asserted_and_kept_otherwise() -> None:
    schema = with_x({"type": "string", "format": "no-such-format"})
    error = refusal(contract(schema, assertFormats=True))
    assert (error.code, error.path) == ("contract.schema_format_unknown",
                                        "$.inputSchema.properties.x.format")
    assert spec_from_mapping(contract(schema)).input_schema == schema
    known = with_x({"type": "string", "format": "email"})
    assert spec_from_mapping(contract(known, assertFormats=True)).assert_formats


def test_a_property_named_format_is_a_name_not_a_keyword() -> None:
    schema = {"type": "object", "properties": {"format": {"type": "string"}}}
    assert spec_from_mapping(contract(schema, assertFormats=True)).input_schema == schema


# ------------------------------------------------------------------ bare schemas and the validator

def test_compile_schema_refuses_an_outside_reference_with_a_schema_code_and_path(
        secret_uri: str) -> None:
    with pytest.raises(SchemaError) as caught:
        compile_schema({"properties": {"x": {"$ref": secret_uri}}})
    assert (caught.value.code, caught.value.path) == ("schema.ref_external",
                                                      '$.properties.x["$ref"]')
    with pytest.raises(SchemaError) as caught:
        validate({"properties": {"x": {"$ref": secret_uri}}}, {"x": "guess"})
    assert caught.value.code == "schema.ref_external"
    assert not any(s in str(caught.value.to_dict()) for s in SECRET)


def test_a_schema_handed_straight_to_the_validator_cannot_read_a_file_or_open_a_connection(
        secret_uri: str) -> None:
    with schema_host() as host:
        for ref in (secret_uri, f"{host.url}/s.json"):
            with pytest.raises(SchemaError) as caught:
                CompiledSchema({"properties": {"x": {"$ref": ref}}})
            assert caught.value.code == "schema.ref_external"
            assert not any(s in caught.value.message for s in SECRET)
        assert host.connections == 0


# ------------------------------------------------------------------ the gateway keeps answering

_PRINCIPAL = Principal.parse("acme", [], "internal")
_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}


def _ask(kernel: ServerKernel, message: dict[str, Any]) -> dict[str, Any]:
    reply = kernel.handle_stream_message(kernel.open_stream(), message)
    assert isinstance(reply, Reply), reply
    decoded: dict[str, Any] = decode_message(reply.body)
    return decoded


def _listed(kernel: ServerKernel) -> list[str]:
    """The names tools/list answers with. Asked while the other thread's work is under way: that
    work is refused without a connection, and a build that let it reach the silent host would
    leave it (and anything it held) waiting on a host that never answers, which the tests see
    as a connection counted and the thread still alive after its join."""
    return [t["name"] for t in _ask(kernel, _LIST)["result"]["tools"]]


def _in_thread(work: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(work())
        except ToolkeeperError as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_publishing_a_remote_ref_is_refused_while_the_gateway_keeps_answering() -> None:
    registry = Registry.open("memory:")
    registry.publish(spec_from_mapping({**contract({"type": "object"}), "name": "steady"}))
    handlers = ToolHandlers()
    handlers.bind("steady", lambda arguments: "steady", inline=True)  # listed: it can run
    kernel = build_gateway(registry, handlers,
                           resolve_principal=fixed_principal(_PRINCIPAL)).kernel
    with schema_host(silent=True) as host:
        data = contract(with_x({"$ref": f"{host.url}/never.json"}))
        thread, out = _in_thread(lambda: registry.publish(spec_from_mapping(data)))
        assert _listed(kernel) == ["steady"]
        thread.join(5)
        assert not thread.is_alive()
        assert isinstance(out[0], ContractError)
        assert out[0].code == "contract.schema_ref_external"
        assert host.connections == 0
    registry.close()


def test_a_stored_record_with_a_remote_ref_fails_its_call_without_a_connection(
        tmp_path: Path) -> None:
    """A record that skipped parsing (a row written by an older release, or by hand) reaches
    the validator only when a call compiles it: that call fails, nothing is fetched, and the
    gateway keeps answering."""
    url = f"sqlite://{tmp_path / 'registry.db'}"
    registry = Registry.open(url)
    registry.publish(spec_from_mapping({**contract({"type": "object"}), "name": "steady"}))
    registry.close()
    with schema_host(silent=True) as host:
        data = contract(with_x({"$ref": f"{host.url}/never.json"}))
        smuggled = spec_from_mapping(data, trusted=True)
        row = canonical_json(spec_to_mapping(smuggled)).decode()
        with sqlite3.connect(tmp_path / "registry.db") as db:
            db.execute("INSERT INTO contracts (name, version_key, version, content_digest, "
                       "status, document) VALUES (?, ?, ?, ?, ?, ?)",
                       ("lookup", "1.0.0", "1.0.0", smuggled.content_digest, "active", row))
        db.close()
        registry = Registry.open(url)
        handlers = ToolHandlers()
        handlers.bind("lookup", lambda arguments, ctx: {"ok": True})
        handlers.bind("steady", lambda arguments: "steady", inline=True)
        kernel = build_gateway(registry, handlers,
                               resolve_principal=fixed_principal(_PRINCIPAL)).kernel
        call = {**_LIST, "method": "tools/call",
                "params": {**_LIST["params"], "name": "lookup", "arguments": {"x": "guess"}}}
        thread, out = _in_thread(lambda: _ask(kernel, call))
        assert _listed(kernel) == ["lookup", "steady"]
        thread.join(5)
        assert not thread.is_alive()
        assert out[0]["error"] == {"code": -32603, "message": "Internal error"}
        assert host.connections == 0
        registry.close()
