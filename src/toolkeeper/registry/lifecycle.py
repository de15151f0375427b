"""Lifecycle transitions (SPEC 2.2): active -> deprecated -> retired; retired is terminal.

The transitions are a table from (current status, action) to the outcome, so adding a state or
an action is adding rows. Every function here is pure: the registry applies the result inside a
store transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec
from toolkeeper.errors import LifecycleError

__all__ = ["ACTIONS", "DEPRECATE", "RETIRE", "deprecated", "retired"]

DEPRECATE = "deprecate"
RETIRE = "retire"
ACTIONS = (DEPRECATE, RETIRE)

# (status, action) -> the new status, or the refusal rule id (a str starting "lifecycle.").
_TRANSITIONS: Mapping[tuple[Status, str], Status | str] = MappingProxyType({
    (Status.ACTIVE, DEPRECATE): Status.DEPRECATED,
    (Status.DEPRECATED, DEPRECATE): Status.DEPRECATED,  # updates message/successor
    (Status.RETIRED, DEPRECATE): "lifecycle.retired_is_terminal",
    (Status.ACTIVE, RETIRE): Status.RETIRED,
    (Status.DEPRECATED, RETIRE): Status.RETIRED,
    (Status.RETIRED, RETIRE): Status.RETIRED,  # idempotent: nothing changes
})


def _transition(spec: ToolSpec, action: str) -> Status:
    outcome = _TRANSITIONS[(spec.status, action)]
    if isinstance(outcome, str):
        raise LifecycleError(
            f"{spec.name} {spec.version} is {spec.status.value}; cannot {action} it",
            code=outcome,
            data={"name": spec.name, "version": str(spec.version),
                  "status": spec.status.value, "action": action},
        )
    return outcome


def _check_successor(spec: ToolSpec, successor: Version, history: Sequence[ToolSpec]
                     ) -> Version:
    """The published version ``successor`` names, as stored (a spelling with other build
    metadata names the same version: the record keeps the stored one)."""
    data = {"name": spec.name, "version": str(spec.version), "successor": str(successor)}
    target = next((s for s in history if s.version == successor), None)
    if target is None:
        raise LifecycleError(f"successor {successor} of {spec.name} is not published",
                             code="lifecycle.successor_unknown", data=data)
    if not successor > spec.version:
        raise LifecycleError(f"successor {successor} is not newer than {spec.version}",
                             code="lifecycle.successor_not_newer", data=data)
    if target.status is Status.RETIRED:
        raise LifecycleError(f"successor {successor} is retired",
                             code="lifecycle.successor_retired", data=data)
    return target.version


def deprecated(spec: ToolSpec, history: Sequence[ToolSpec], *, message: str | None,
               successor: Version | None) -> ToolSpec:
    """``spec`` deprecated with ``message`` and ``successor`` (a newer, unretired version).

    Deprecating again updates what is given and keeps what is not: nothing stored is lost.
    """
    status = _transition(spec, DEPRECATE)
    if successor is not None:
        successor = _check_successor(spec, successor, history)
    return spec.with_lifecycle(
        status=status,
        deprecation_message=message if message is not None else spec.deprecation_message,
        successor=successor if successor is not None else spec.successor,
    )


def retired(spec: ToolSpec) -> ToolSpec:
    """``spec`` retired (terminal). Deprecation details are kept for the record."""
    return spec.with_lifecycle(status=_transition(spec, RETIRE))
