"""The demo estate: SPEC 4's payments.lookup, seed 003's db.query 3 (retired) and 4, a write
tool, and deterministic handlers."""

from __future__ import annotations

import json
from pathlib import Path

from toolkeeper.contracts.spec import SideEffect, Status
from toolkeeper.demo import demo_contracts, demo_handlers, install_demo
from toolkeeper.registry import Registry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _by_key() -> dict[tuple[str, str], object]:
    return {(s.name, str(s.version)): s for s in demo_contracts()}


def test_payments_lookup_has_exactly_the_spec_4_input_schema() -> None:
    (spec,) = [s for s in demo_contracts() if s.name == "payments.lookup"]
    schema = spec.input_schema
    assert schema["required"] == ["reference"] and schema["additionalProperties"] is False
    assert schema["properties"]["reference"]["pattern"] == r"^PMT-\d{3,}$"
    assert schema["properties"]["include_legs"]["type"] == "boolean"
    assert schema["properties"]["include_legs"]["default"] is False
    assert set(schema["properties"]) == {"reference", "include_legs"}


def test_db_query_v3_and_v4_follow_seed_003() -> None:
    specs = {str(s.version): s for s in demo_contracts() if s.name == "db.query"}
    v3, v4 = specs["3.0.0"].input_schema, specs["4.0.0"].input_schema
    assert v3["properties"]["timeout_ms"]["default"] == 30000
    assert v3["properties"]["mode"]["enum"] == ["read", "write"]
    assert "timeout" in v4["required"] and "default" not in v4["properties"]["timeout"]
    assert v4["properties"]["mode"]["enum"] == ["read"]


def test_the_demo_contracts_match_the_example_copies_when_present() -> None:
    for name, example in (("payments.lookup-1.0.0.json", "payments.lookup.json"),
                          ("db.query-3.0.0.json", "db.query-3.0.0.json"),
                          ("db.query-4.0.0.json", "db.query-4.0.0.json")):
        source = EXAMPLES / example
        if source.exists():
            ours = Path(__file__).resolve().parents[2] / "src/toolkeeper/demo" / name
            assert json.loads(ours.read_text()) == json.loads(source.read_text())


def test_installing_publishes_retires_and_is_idempotent() -> None:
    registry = Registry.open("memory:")
    assert install_demo(registry)[-1] == "retired db.query 3.0.0"
    assert install_demo(registry) == []
    statuses = {(s.name, str(s.version)): s.status for n in registry.names()
                for s in registry.versions(n)}
    assert statuses[("db.query", "3.0.0")] is Status.RETIRED
    assert statuses[("db.query", "4.0.0")] is Status.ACTIVE
    assert any(s.side_effect is SideEffect.WRITE for s in demo_contracts()
               if s.name == "tickets.create")


def test_every_served_demo_contract_has_a_handler() -> None:
    handlers = demo_handlers()
    for spec in demo_contracts():
        assert handlers.lookup(spec.name, spec.version) is not None, spec.name
