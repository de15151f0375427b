"""The upstream tool row is written before its contract is published: whoever re-reads the
bindings on the registry's change (a replica following the change feed) finds the version that
change published, on a first import, a drift published by policy and an approval; a publish
the registry refuses puts the row back as it was."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from toolkeeper.contracts.spec import spec_from_mapping, spec_to_mapping
from toolkeeper.registry import MemoryStore, Registry
from toolkeeper.upstreams.descriptor import descriptor_digest
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition

DEFN = UpstreamDefinition(name="files", command=("files-server",), prefix="f.")


def _tool(*, optional: tuple[str, ...] = (), description: str = "Search the files."
          ) -> dict[str, Any]:
    props = {p: {"type": "string"} for p in ("q", *optional)}
    return {"name": "search", "description": description,
            "inputSchema": {"type": "object", "properties": props, "required": ["q"]}}


@pytest.fixture
def ups() -> Iterator[Upstreams]:
    registry = Registry(MemoryStore())
    upstreams = Upstreams(registry)
    upstreams.add(DEFN, origin="cli", actor="ops")
    yield upstreams
    registry.close()


def test_each_change_finds_the_binding_of_the_version_it_published(ups: Upstreams) -> None:
    seen: list[list[str]] = []
    ups.registry.subscribe(lambda: seen.append([b.version for b in ups.bindings()]))
    ups.apply_listing("files", [_tool()], actor="sync")
    ups.apply_listing("files", [_tool(optional=("limit",))], actor="sync")
    ups.apply_listing("files", [_tool(optional=("limit",), description="Changed.")],
                      actor="sync")
    ups.approve("files", "search",
                descriptor_digest(_tool(optional=("limit",), description="Changed.")),
                actor="key:k1")
    assert seen == [["1.0.0"], ["1.0.0", "1.1.0"], ["1.0.0", "1.1.0", "1.1.1"]]


def test_a_refused_publish_puts_the_row_back(ups: Upstreams) -> None:
    ups.apply_listing("files", [_tool()], actor="sync")
    in_force = ups.registry.get("f.search", "1.0.0")
    assert in_force is not None
    # a native 1.1.0 (compatible, so the guard takes it) holds the version the drift would take
    taken = {**spec_to_mapping(in_force, lifecycle=False), "version": "1.1.0"}
    taken["inputSchema"] = _tool(optional=("other",))["inputSchema"]
    ups.registry.publish(spec_from_mapping(taken), actor="ops")
    outcome = ups.apply_listing("files", [_tool(optional=("limit",))], actor="sync").tools[0]
    assert (outcome.action, outcome.version) == ("refused", "1.0.0")
    [row] = ups.tools("files")
    assert (row.version, sorted(row.versions)) == ("1.0.0", ["1.0.0"])
    assert row.last_seen_digest == descriptor_digest(_tool(optional=("limit",)))
    assert [b.version for b in ups.bindings()] == ["1.0.0"]
