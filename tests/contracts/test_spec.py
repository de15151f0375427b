from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import (
    RETRYABLE,
    DataClassification,
    SideEffect,
    Status,
    classification_rank,
    spec_from_mapping,
    spec_to_mapping,
)
from toolkeeper.errors import ContractError


def _contract(examples: Path, name: str = "payments.lookup.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((examples / name).read_text())
    return data


def test_retryable_covers_every_side_effect() -> None:
    assert set(RETRYABLE) == set(SideEffect)
    assert RETRYABLE[SideEffect.READ] and not RETRYABLE[SideEffect.DESTRUCTIVE]


def test_example_contracts_parse(examples_dir: Path) -> None:
    for path in sorted(examples_dir.glob("*.json")):
        data = json.loads(path.read_text())
        if "inputSchema" in data:
            spec = spec_from_mapping(data)
            assert spec.name and isinstance(spec.version, Version)


def test_descriptor_carries_exactly_the_spec_fields(examples_dir: Path) -> None:
    spec = spec_from_mapping(_contract(examples_dir))
    descriptor = spec.to_mcp()
    assert set(descriptor) == {"name", "title", "description", "inputSchema", "annotations", "_meta"}
    assert descriptor["_meta"] == {"schemaVersion": "1.0.0"}
    assert descriptor["annotations"]["readOnlyHint"] is True
    rendered = json.dumps(descriptor)
    for policy in ("tenants", "requiredScopes", "dataClassification", "payments.read",
                   "confidential"):
        assert policy not in rendered


def test_descriptor_has_output_schema_only_when_defined(examples_dir: Path) -> None:
    data = _contract(examples_dir)
    data["outputSchema"] = {"type": "object"}
    assert spec_from_mapping(data).to_mcp()["outputSchema"] == {"type": "object"}


@pytest.mark.parametrize(
    ("mutate", "path", "code"),
    [
        (lambda d: d.update(extra=1), "$.extra", "contract.unknown_key"),
        (lambda d: d.pop("title"), "$.title", "contract.missing_key"),
        (lambda d: d.pop("sideEffect"), "$.sideEffect", "contract.missing_key"),
        (lambda d: d.update(version="1.0"), "$.version", "contract.version"),
        (lambda d: d.update(name="bad name"), "$.name", "contract.name"),
        (lambda d: d.update(name="ok\n"), "$.name", "contract.name"),
        (lambda d: d.update(dataClassification="secret"), "$.dataClassification", "contract.enum"),
        (lambda d: d.update(sideEffect="maybe"), "$.sideEffect", "contract.enum"),
        (lambda d: d.update(tenants="acme"), "$.tenants", "contract.type"),
        (lambda d: d.update(requiredScopes=["a", 1]), "$.requiredScopes[1]", "contract.type"),
        (lambda d: d.update(requiredScopes=["a", "a"]), "$.requiredScopes", "contract.duplicate"),
        (lambda d: d.update(inputSchema={"type": "string"}), "$.inputSchema",
         "contract.schema_root"),
        (lambda d: d.update(inputSchema={"type": "object", "minProperties": "x"}),
         "$.inputSchema", "contract.schema"),
        (lambda d: d.update(assertFormats="yes"), "$.assertFormats", "contract.type"),
        (lambda d: d.update(description=""), "$.description", "contract.empty"),
    ],
)
def test_bad_contracts_are_refused_with_path_and_code(
    examples_dir: Path, mutate: Any, path: str, code: str
) -> None:
    data = copy.deepcopy(_contract(examples_dir))
    mutate(data)
    with pytest.raises(ContractError) as info:
        spec_from_mapping(data)
    assert (info.value.path, info.value.code) == (path, code)


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}},
         ".properties.r"),
        ({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "a b"}}},
         ".properties.r"),
        ({"type": "object", "properties": {"l": {"type": "array", "items": {
            "type": "string", "x-mcp-header": "L"}}}}, ".properties.l.items"),
        ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                           "b": {"type": "string", "x-mcp-header": "x"}}},
         ".properties.b"),
    ],
)
def test_invalid_x_mcp_header_annotations_are_refused(
    examples_dir: Path, schema: dict[str, Any], path: str
) -> None:
    data = _contract(examples_dir)
    data["inputSchema"] = schema
    with pytest.raises(ContractError) as info:
        spec_from_mapping(data)
    assert (info.value.code, info.value.path) == ("contract.x_mcp_header", "$.inputSchema" + path)


def test_valid_x_mcp_header_annotation_is_accepted(examples_dir: Path) -> None:
    data = _contract(examples_dir)
    data["inputSchema"] = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}
    assert spec_from_mapping(data).input_schema == data["inputSchema"]


def test_classification_rank_orders_and_refuses_unknown_names() -> None:
    ranks = [classification_rank(c) for c in DataClassification]
    assert ranks == sorted(ranks) == [0, 1, 2, 3]
    assert classification_rank("restricted") == 3
    with pytest.raises(ContractError) as info:
        classification_rank("top-secret")
    assert info.value.code == "contract.classification_unknown"


def test_mapping_round_trip_and_lifecycle(examples_dir: Path) -> None:
    spec = spec_from_mapping(_contract(examples_dir))
    stored = spec.with_lifecycle(status=Status.DEPRECATED, successor=Version.parse("2.0.0"),
                                 deprecation_message="use 2", publisher="ci")
    again = spec_from_mapping(spec_to_mapping(stored), lifecycle=True)
    assert again == stored
    assert again.content_digest == spec.content_digest  # lifecycle is not content
    with pytest.raises(ContractError):
        spec_from_mapping(spec_to_mapping(stored))  # lifecycle keys are not contract keys


def test_content_digest_changes_with_content(examples_dir: Path) -> None:
    data = _contract(examples_dir)
    before = spec_from_mapping(data).content_digest
    data["description"] += " "
    assert spec_from_mapping(data).content_digest != before


def test_deeply_nested_json_is_a_contract_error_not_a_crash() -> None:
    from toolkeeper.contracts.canonical import loads_json

    with pytest.raises(ContractError) as info:
        loads_json(b"[" * 100_000)
    assert info.value.code == "json.too_deep"


def test_trusted_parse_skips_schema_compilation_but_not_shape_checks(examples_dir: Path) -> None:
    data = _contract(examples_dir)
    data["inputSchema"] = {"type": "object", "minProperties": "x"}
    assert spec_from_mapping(data, trusted=True).input_schema == data["inputSchema"]
    data["inputSchema"] = {"type": "string"}
    with pytest.raises(ContractError) as info:
        spec_from_mapping(data, trusted=True)
    assert info.value.code == "contract.schema_root"
