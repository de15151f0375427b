"""The demo estate of ``toolkeeper serve --demo``: contracts (package JSON files) and handlers.

* ``payments.lookup`` 1.0.0: SPEC 4's contract (confidential, scope ``payments.read``);
* ``db.query`` 3.0.0 (retired) and 4.0.0 (current): seed 003's renegotiation;
* ``tickets.create`` 1.0.0: a write tool with an output schema.
"""

from __future__ import annotations

from importlib import resources

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec, spec_from_mapping
from toolkeeper.demo.handlers import demo_handlers
from toolkeeper.registry import Registry

__all__ = ["CONTRACT_FILES", "RETIRED", "demo_contracts", "demo_handlers", "install_demo"]

CONTRACT_FILES = (
    "db.query-3.0.0.json",
    "db.query-4.0.0.json",
    "payments.lookup-1.0.0.json",
    "tickets.create-1.0.0.json",
)
"""In publishing order (3.0.0 before 4.0.0)."""

RETIRED = (("db.query", "3.0.0"),)

DEMO_ACTOR = "toolkeeper-demo"


def demo_contracts() -> list[ToolSpec]:
    """The demo contracts, parsed from the package data."""
    folder = resources.files("toolkeeper.demo")
    return [spec_from_mapping(loads_json(folder.joinpath(name).read_bytes()))
            for name in CONTRACT_FILES]


def install_demo(registry: Registry, *, actor: str = DEMO_ACTOR) -> list[str]:
    """Publish whatever part of the demo estate is absent and retire ``db.query`` 3.0.0;
    returns what was done (empty when the estate was already there). A conflicting contract
    already in the registry makes the publish guard refuse, and that error propagates."""
    done: list[str] = []
    for spec in demo_contracts():
        if registry.get(spec.name, spec.version) is None and registry.publish_outcome(
                spec, actor=actor).created:
            done.append(f"published {spec.name} {spec.version}")
    for name, version in RETIRED:
        parsed = Version.parse(version)
        current = registry.get(name, parsed)
        if current is not None and current.status is not Status.RETIRED:
            registry.retire(name, parsed, actor=actor)
            done.append(f"retired {name} {version}")
    return done
