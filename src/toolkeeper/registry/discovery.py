"""Discovery (SPEC 2.3): per principal, the newest *visible* version of every tool.

For each name in sorted order, walk the versions newest first and take the first one that is
not retired, not deprecated (unless asked), open to the tenant, classified at or below the
clearance, and whose required scopes the principal holds. Taking the first *visible* one is a
decision (seed 000 section 5): a principal who lacks the scope 2.0.0 needs still sees 1.0.0.

Views are precomputed per (tenant, scope set, clearance, include_deprecated, hidden) and kept
in a bounded LRU cache that the registry clears on every change. Keys are normalised first
(scopes no contract requires and tenants no contract names are dropped), so callers who see the
same estate share one view. ``hidden`` names the (tool, version) pairs the walk skips as if they
were not there: the candidates of rollouts a principal is not routed to
(:mod:`toolkeeper.registry.routing`); empty, it changes nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec, classification_rank
from toolkeeper.registry.principal import Principal

__all__ = ["Gate", "ViewCache", "ViewKey", "build_view", "gate_of", "is_visible"]

ViewKey = tuple[str | None, frozenset[str], int, bool, frozenset[tuple[str, Version]]]


def is_visible(spec: ToolSpec, principal: Principal, *, include_deprecated: bool = False) -> bool:
    """Whether ``principal`` may see this version (retired never; deprecated only if asked)."""
    if spec.status is Status.RETIRED:
        return False
    if spec.status is Status.DEPRECATED and not include_deprecated:
        return False
    if spec.tenants and principal.tenant not in spec.tenants:
        return False
    if classification_rank(spec.data_classification) > classification_rank(principal.clearance):
        return False
    return spec.required_scopes <= principal.scopes


#: What visibility reads of one version, precomputed: (status level, tenants, classification
#: rank, required scopes, the spec). Tuples unpack faster than attribute lookups, which is what
#: keeps a rebuild of a 10,000-tool view well inside its budget (bench/registry.py).
Gate = tuple[int, frozenset[str], int, frozenset[str], ToolSpec]

_STATUS_LEVEL = {Status.ACTIVE: 0, Status.DEPRECATED: 1, Status.RETIRED: 2}


def gate_of(spec: ToolSpec) -> Gate:
    """The precomputed visibility facts of one version."""
    return (_STATUS_LEVEL[spec.status], spec.tenants,
            classification_rank(spec.data_classification), spec.required_scopes, spec)


def build_view(names: Iterable[str], gates: Mapping[str, Sequence[Gate]],
               key: ViewKey) -> tuple[ToolSpec, ...]:
    """The view for a normalised key: the first visible version of each name, walking
    ``gates[name]`` (newest first), in ``names`` order, skipping the hidden versions."""
    tenant, held, clearance, include_deprecated, hidden = key
    if hidden:
        gates = {**gates, **{name: [gate for gate in gates.get(name, ())
                                    if gate[4].version != version]
                             for name, version in hidden}}
    max_level = 1 if include_deprecated else 0
    out: list[ToolSpec] = []
    append = out.append
    for name in names:
        for level, tenants, rank, scopes, spec in gates[name]:
            if (level <= max_level and rank <= clearance
                    and (not tenants or tenant in tenants) and scopes <= held):
                append(spec)
                break
    return tuple(out)


class ViewCache:
    """A bounded LRU of discovery views, cleared wholesale on any change.

    Not thread-safe by itself: the registry holds its lock across ``get`` (which may build) and
    ``clear``, so a view built from an old index can never be stored after an invalidation.
    """

    def __init__(self, maxsize: int = 1024) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self._maxsize = maxsize
        self._views: OrderedDict[ViewKey, tuple[ToolSpec, ...]] = OrderedDict()
        self.builds = 0

    def __len__(self) -> int:
        return len(self._views)

    def get(self, key: ViewKey, build: Callable[[ViewKey], tuple[ToolSpec, ...]],
            ) -> tuple[ToolSpec, ...]:
        view = self._views.get(key)
        if view is not None:
            self._views.move_to_end(key)
            return view
        view = build(key)
        self.builds += 1
        self._views[key] = view
        if len(self._views) > self._maxsize:
            self._views.popitem(last=False)
        return view

    def clear(self) -> None:
        self._views.clear()
