"""The schema-version gate of ``tools/call`` (SPEC 3.4 steps 1-2, seed 003).

Given the caller's principal, the tool name and the optional ``params._meta.schemaVersion``,
decide which contract version the call runs under, or refuse:

* no tool visible to the principal (unknown, or invisible): -32602 ``Unknown tool: <name>``,
  one shape for both, so the error is no existence oracle;
* no version declared: the served version, validated strictly (unknown properties refused);
* the served version: accepted;
* another version that is still callable (active or deprecated) and visible: accepted under
  exactly that version's schema, and the result names the successor: the one its deprecation
  named while that is callable and visible to this caller, else the version served to it (a
  successor the caller may not see, or one retired since, is never named);
* a retired version: -32602 ``schema_version_retired`` (the call never executes);
* a callable, visible version that nothing in this process can run (no handler bound to it,
  :mod:`~toolkeeper.server.runnable`): -32602 ``schema_version_unavailable`` (it is not
  listed either);
* anything else (never published, not semver, or not visible): -32602 ``schema_version_unknown``.

While a version of the tool is rolled out (:mod:`toolkeeper.registry.routing`), a caller
outside the candidate's share is served the version below it, and a pin to the candidate is
``schema_version_unknown`` exactly as a pin to a version never published (no oracle); a caller
in the share is served the candidate, and a pin to the target works as any pin does. A tool
whose rollout is halted refuses every call of a caller who may see the tool with -32602
``release.halted`` (``{"reason": "release.halted", "tool"}``) until an operator acts; a caller
who may not see it still gets ``Unknown tool``.

Gate rejections carry ``{"reason", "tool", "requestedVersion", "currentVersion", "action":
"relist"}`` so a client can re-list and retry once.

FastMCP's client pins a tool version with ``call_tool(..., version=V)``, which it sends as
``params._meta.fastmcp.version``. When that value is a semver string it is read as the
``schemaVersion`` (so FastMCP users get pinning and re-list refusals without changing code);
any other value is FastMCP's own business and ignored. Both present and different: -32602
``schema_version_conflict`` with the path of the FastMCP key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec
from toolkeeper.errors import JsonRpcError, SemverError
from toolkeeper.protocol.faults import invalid_params
from toolkeeper.registry import Principal, Registry, is_visible
from toolkeeper.server.views import ToolViews

__all__ = ["CONFLICT", "HALTED", "RETIRED", "UNAVAILABLE", "UNKNOWN", "Plan", "halted_tool",
           "plan_call", "requested_version", "unknown_tool"]

RETIRED = "schema_version_retired"
UNAVAILABLE = "schema_version_unavailable"
UNKNOWN = "schema_version_unknown"
CONFLICT = "schema_version_conflict"
HALTED = "release.halted"
SCHEMA_VERSION_KEY = "schemaVersion"
FASTMCP_META_KEY = "fastmcp"


@dataclass(frozen=True, slots=True)
class Plan:
    """The contract a call runs under. ``strict``: no version was declared, so the root is
    closed to unknown properties. ``successor``: set when the caller pinned an older version."""

    spec: ToolSpec
    strict: bool
    successor: Version | None = None


_VERBS = {RETIRED: "is retired", UNAVAILABLE: "cannot run on this gateway"}


def unknown_tool(name: str) -> JsonRpcError:
    """The one error for a tool that does not exist *or* that the caller may not see."""
    return invalid_params(f"Unknown tool: {name}")


def halted_tool(name: str) -> JsonRpcError:
    """The error for every call to a tool whose rollout is halted (the caller may see it)."""
    return invalid_params(
        f"tool {name!r} is halted by its rollout; calls are refused until an operator acts",
        {"reason": HALTED, "tool": name})


def _gate_error(reason: str, name: str, requested: str, current: ToolSpec | None
                ) -> JsonRpcError:
    verb = _VERBS.get(reason, "is not a version this caller can use")
    return invalid_params(
        f"schema version {requested} of tool {name!r} {verb}; re-list tools and retry",
        {"reason": reason, "tool": name, "requestedVersion": requested,
         "currentVersion": str(current.version) if current is not None else None,
         "action": "relist"})


def requested_version(params: Mapping[str, Any]) -> str | None:
    """``params._meta.schemaVersion`` (or FastMCP's semver ``_meta.fastmcp.version``): a
    string, absent (None), or -32602."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    value = meta.get(SCHEMA_VERSION_KEY)
    if value is not None and not isinstance(value, str):
        raise invalid_params("params._meta.schemaVersion must be a string",
                             {"path": "$.params._meta.schemaVersion"})
    pinned = _fastmcp_version(meta.get(FASTMCP_META_KEY))
    if pinned is None:
        return value
    if value is not None and value != pinned:
        raise invalid_params(
            "params._meta.fastmcp.version and params._meta.schemaVersion name different "
            "versions", {"path": "$.params._meta.fastmcp.version", "reason": CONFLICT})
    return pinned


def _fastmcp_version(fastmcp: Any) -> str | None:
    """FastMCP's ``version`` when it is a semver string, else None."""
    if not isinstance(fastmcp, dict):
        return None
    value = fastmcp.get("version")
    if not isinstance(value, str):
        return None
    try:
        Version.parse(value)
    except SemverError:
        return None
    return value


def plan_call(registry: Registry, views: ToolViews, principal: Principal, name: str,
              requested: str | None) -> Plan:
    """Decide the contract for a call, or raise the gate's JsonRpcError."""
    view = views.view(principal)
    hidden = view.hidden
    served = view.by_name.get(name)
    fallback: ToolSpec | None = None
    if served is None:
        fallback = views.view(principal, include_deprecated=True).by_name.get(name)
        if fallback is None and requested is not None:
            _refuse_unrunnable(registry, views, principal, name, requested, hidden)
        if fallback is None:
            raise unknown_tool(name)
    if hidden and views.routing.halted(name) is not None:
        raise halted_tool(name)
    if served is None and requested is None:
        raise unknown_tool(name)
    if requested is None:
        assert served is not None
        return Plan(served, strict=True)
    current = served if served is not None else fallback
    try:
        version = Version.parse(requested)
    except SemverError:
        raise _gate_error(UNKNOWN, name, requested, current) from None
    if served is not None and version == served.version:
        return Plan(served, strict=False)
    pinned = registry.get(name, version)
    if pinned is None or (name, version) in hidden:
        raise _gate_error(UNKNOWN, name, requested, current)
    if pinned.status is Status.RETIRED:
        entitled = is_visible(pinned.with_lifecycle(status=Status.ACTIVE), principal)
        raise _gate_error(RETIRED if entitled else UNKNOWN, name, requested, current)
    if not is_visible(pinned, principal, include_deprecated=True):
        raise _gate_error(UNKNOWN, name, requested, current)
    if not views.can_run(pinned):
        raise _gate_error(UNAVAILABLE, name, requested, current)
    successor = pinned.successor
    if successor is not None:  # named only while this caller can migrate to it
        target = registry.get(name, successor)
        if (target is None or (name, successor) in hidden
                or not is_visible(target, principal, include_deprecated=True)):
            successor = None
    if successor is None and served is not None and served.version != pinned.version:
        successor = served.version
    return Plan(pinned, strict=False, successor=successor)


def _refuse_unrunnable(registry: Registry, views: ToolViews, principal: Principal, name: str,
                       requested: str, hidden: frozenset[tuple[str, Version]]) -> None:
    """For a tool none of whose versions can run here: a pin to a version the caller may see
    is ``schema_version_unavailable`` (one it may not see stays ``Unknown tool``)."""
    try:
        pinned = registry.get(name, Version.parse(requested))
    except SemverError:
        return
    if (pinned is not None and (name, pinned.version) not in hidden
            and is_visible(pinned, principal, include_deprecated=True)
            and not views.can_run(pinned)):
        raise _gate_error(UNAVAILABLE, name, requested, None)
