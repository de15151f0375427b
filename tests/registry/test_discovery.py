"""Discovery against a brute-force oracle, over random estates and principals (SPEC 2.3)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from registry_kit import make_spec

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import DataClassification, Status, ToolSpec
from toolkeeper.errors import PrincipalError
from toolkeeper.registry import MemoryStore, Principal, Registry, is_visible
from toolkeeper.registry.discovery import ViewCache

TENANTS = ("acme", "globex", "initech")
SCOPES = ("read", "write", "admin")
RANK = {c: i for i, c in enumerate(DataClassification)}


@dataclass(frozen=True)
class Row:
    name: str
    version: str
    status: Status
    tenants: frozenset[str]
    classification: DataClassification
    scopes: frozenset[str]


def _spec(row: Row) -> ToolSpec:
    spec = make_spec(row.name, row.version, tenants=sorted(row.tenants),
                     requiredScopes=sorted(row.scopes),
                     dataClassification=row.classification.value)
    return spec.with_lifecycle(status=row.status)


versions = st.builds(
    lambda major, minor, patch, pre: f"{major}.{minor}.{patch}" + ("-rc.1" if pre else ""),
    st.integers(0, 3), st.integers(0, 2), st.integers(0, 1), st.booleans())
rows = st.builds(
    Row,
    name=st.sampled_from(("alpha", "beta", "gamma", "delta")),
    version=versions,
    status=st.sampled_from(Status),
    tenants=st.frozensets(st.sampled_from(TENANTS), max_size=2),
    classification=st.sampled_from(DataClassification),
    scopes=st.frozensets(st.sampled_from(SCOPES), max_size=2),
)
principals = st.builds(
    Principal,
    tenant=st.sampled_from((*TENANTS, "unknown-tenant")),
    scopes=st.frozensets(st.sampled_from((*SCOPES, "unrelated")), max_size=4),
    clearance=st.sampled_from(DataClassification),
)


def _oracle(specs: list[ToolSpec], who: Principal, include_deprecated: bool) -> list[ToolSpec]:
    """Written independently of the registry: filter every version, then take the maximum."""
    best: dict[str, ToolSpec] = {}
    for spec in specs:
        allowed_status = spec.status is Status.ACTIVE or (
            spec.status is Status.DEPRECATED and include_deprecated)
        if not (allowed_status
                and (not spec.tenants or who.tenant in spec.tenants)
                and RANK[spec.data_classification] <= RANK[who.clearance]
                and all(scope in who.scopes for scope in spec.required_scopes)):
            continue
        if spec.name not in best or spec.version > best[spec.name].version:
            best[spec.name] = spec
    return [best[name] for name in sorted(best)]


def _registry(estate: list[Row]) -> tuple[Registry, list[ToolSpec]]:
    store = MemoryStore()
    unique: dict[tuple[str, Version], ToolSpec] = {}
    for row in estate:
        spec = _spec(row)
        unique.setdefault(spec.key, spec)
    for spec in unique.values():  # seeded below the guard: any history is a valid test estate
        with store.change(spec.name) as tx:
            tx.insert(spec)
    return Registry(store), list(unique.values())


_SCOPE_CASE = [
    Row("payments", "1.0.0", Status.ACTIVE, frozenset(), DataClassification.INTERNAL,
        frozenset({"read"})),
    Row("payments", "2.0.0", Status.ACTIVE, frozenset(), DataClassification.INTERNAL,
        frozenset({"read", "admin"})),
]


@settings(max_examples=150, deadline=None)
@given(estate=st.lists(rows, max_size=24), who=st.lists(principals, min_size=1, max_size=4),
       include_deprecated=st.booleans(), retire=st.integers(min_value=0))
@example(estate=_SCOPE_CASE,
         who=[Principal("acme", frozenset({"read"}), DataClassification.PUBLIC),
              Principal("acme", frozenset({"read"}), DataClassification.INTERNAL),
              Principal("acme", frozenset({"read", "admin"}), DataClassification.INTERNAL)],
         include_deprecated=False, retire=1)
def test_discovery_returns_exactly_the_newest_visible_version_of_each_tool(
        estate: list[Row], who: list[Principal], include_deprecated: bool, retire: int) -> None:
    registry, specs = _registry(estate)
    for principal in who:  # several principals share (and must not pollute) cached views
        found = registry.discover(principal, include_deprecated=include_deprecated)
        assert list(found) == _oracle(specs, principal, include_deprecated)
        assert all(is_visible(s, principal, include_deprecated=include_deprecated)
                   for s in found)
    live = [s for s in specs if s.status is not Status.RETIRED]
    if live:  # a change invalidates every view
        target = sorted(live, key=lambda s: (s.name, s.version))[retire % len(live)]
        registry.retire(target.name, target.version)
        specs = [s.with_lifecycle(status=Status.RETIRED) if s.key == target.key else s
                 for s in specs]
        for principal in who:
            found = registry.discover(principal, include_deprecated=include_deprecated)
            assert list(found) == _oracle(specs, principal, include_deprecated)


def test_a_principal_lacking_the_scope_of_2_0_0_still_sees_1_0_0() -> None:
    registry, _ = _registry(_SCOPE_CASE)
    reader = Principal.parse("acme", ["read"], "internal")
    admin = Principal.parse("acme", ["read", "admin"], "internal")
    assert [str(s.version) for s in registry.discover(reader)] == ["1.0.0"]
    assert [str(s.version) for s in registry.discover(admin)] == ["2.0.0"]


def test_principals_that_differ_only_in_irrelevant_scopes_share_one_view() -> None:
    registry, _ = _registry(_SCOPE_CASE)
    one = registry.discover(Principal.parse("acme", ["read"], "internal"))
    other = registry.discover(Principal.parse("nobody", ["read", "unrelated"], "internal"))
    assert one is other


def test_the_view_cache_is_bounded_and_evicts_the_least_recently_used() -> None:
    cache = ViewCache(maxsize=2)
    built: list[object] = []

    def build(key: object) -> tuple[ToolSpec, ...]:
        built.append(key)
        return ()

    keys = [(None, frozenset(), rank, False) for rank in range(3)]
    cache.get(keys[0], build)
    cache.get(keys[1], build)
    cache.get(keys[0], build)  # 0 is now the most recent
    cache.get(keys[2], build)  # evicts 1
    assert len(cache) == 2
    cache.get(keys[0], build)
    cache.get(keys[1], build)
    assert built == [keys[0], keys[1], keys[2], keys[1]]


def test_an_unknown_clearance_is_an_error_never_a_default() -> None:
    with pytest.raises(PrincipalError) as info:
        Principal.parse("acme", ["read"], "top-secret")
    assert info.value.code == "principal.clearance_unknown"
