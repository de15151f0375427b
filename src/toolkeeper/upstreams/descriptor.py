"""An upstream tool's descriptor: its digest, the contract it becomes, the version it claims.

The **descriptor** of an upstream tool is what the upstream served for it in ``tools/list``,
reduced to :data:`DESCRIPTOR_KEYS` (name, title, description, both schemas, annotations,
``_meta``) with the volatile ``_meta`` keys (:data:`VOLATILE_META_PREFIXES`) left out:
:func:`normalized_descriptor`. Its **digest** (:func:`descriptor_digest`) is the SHA-256 (hex)
of its canonical JSON: two listings that serve the same tool the same way give the same digest,
and any change a model or a caller could see gives another one. Other fields a server may send
(``icons``, ``execution``) are not part of the contract and not digested.

:func:`contract_from_descriptor` turns a descriptor into the contract the gateway serves: the
exposed name, the upstream's title and description, its schemas as given, and the policy fields
(classification, side effect, tenants, scopes) from the definition and its per-tool override.
Annotations may raise the side effect (``destructiveHint: true`` makes it ``destructive``, an
explicit ``readOnlyHint: false`` at least ``write``) and never lower it. A descriptor the
contract rules refuse is ContractError ``upstream.tool_invalid`` naming the tool and the path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from toolkeeper.client.retry import side_effect_of as hinted_side_effect
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import SIDE_EFFECT_RANK, SideEffect, ToolSpec, spec_from_mapping
from toolkeeper.errors import ContractError, SemverError
from toolkeeper.upstreams.model import UpstreamDefinition

_SHORT_VERSION = re.compile(r"(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?")
"""A major, or a major and minor, without leading zeros (FastMCP's short versions)."""

__all__ = [
    "DESCRIPTOR_KEYS",
    "VOLATILE_META_PREFIXES",
    "contract_from_descriptor",
    "descriptor_digest",
    "normalized_descriptor",
    "side_effect_of",
    "upstream_version",
]

DESCRIPTOR_KEYS = ("name", "title", "description", "inputSchema", "outputSchema",
                   "annotations", "_meta")
"""The fields of a served tool that make its descriptor (absent ones stay absent)."""

VOLATILE_META_PREFIXES = ("io.modelcontextprotocol/",)
"""``_meta`` keys left out of the descriptor. The ``io.modelcontextprotocol/`` prefix is
reserved by MCP for values set per hop (a related task, a progress token): they describe the
exchange, not the tool, and are never copied across the gateway. Every other key (a vendor's
``_meta`` such as FastMCP's tags, a ``schemaVersion``) is what the upstream says about the tool,
and a change to it is a drift like any other."""


def normalized_descriptor(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The descriptor of a served tool: :data:`DESCRIPTOR_KEYS` only, ``_meta`` without its
    volatile keys (and left out when nothing remains)."""
    out = {key: tool[key] for key in DESCRIPTOR_KEYS if key in tool and key != "_meta"}
    meta = tool.get("_meta")
    if isinstance(meta, Mapping):
        kept = {key: value for key, value in meta.items()
                if not str(key).startswith(VOLATILE_META_PREFIXES)}
        if kept:
            out["_meta"] = kept
    elif meta is not None:
        out["_meta"] = meta
    return out


def descriptor_digest(tool: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of :func:`normalized_descriptor`."""
    return hashlib.sha256(canonical_json(normalized_descriptor(tool))).hexdigest()


def upstream_version(descriptor: Mapping[str, Any]) -> Version | None:
    """The version the upstream publishes for the tool: ``_meta.schemaVersion`` (semver), else
    FastMCP's ``_meta.fastmcp.version`` (semver, or the ``N`` or ``N.M`` that FastMCP's
    ``version=`` accepts and lists as a string: ``2`` is 2.0.0, ``1.2`` is 1.2.0); None when
    there is none or it is neither."""
    meta = descriptor.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    fastmcp = meta.get("fastmcp")
    for value, short_allowed in (
            (meta.get("schemaVersion"), False),
            (fastmcp.get("version") if isinstance(fastmcp, Mapping) else None, True)):
        if not isinstance(value, str):
            continue
        if short_allowed and _SHORT_VERSION.fullmatch(value):
            value += ".0" * (2 - value.count("."))
        try:
            return Version.parse(value)
        except SemverError:
            continue
    return None


def _annotations(descriptor: Mapping[str, Any]) -> Mapping[str, Any]:
    value = descriptor.get("annotations")
    return value if isinstance(value, Mapping) else {}


def side_effect_of(declared: SideEffect, descriptor: Mapping[str, Any]) -> SideEffect:
    """The side effect an upstream tool gets: the declared one, raised to what the upstream's
    own annotations say when they say more. ``destructiveHint: true`` makes it
    ``destructive``; an explicit ``readOnlyHint: false`` makes it at least what the hints
    imply under MCP's defaults for the absent ones (``write``, ``idempotent_write`` or
    ``destructive``), so the gateway never lists a tool as read-only that its server says is
    not. An annotation never lowers it (a server's ``readOnlyHint: true`` is a claim, the
    operator's declaration is the policy)."""
    annotations = _annotations(descriptor)
    implied = declared
    if annotations.get("readOnlyHint") is False:
        implied = hinted_side_effect({"annotations": dict(annotations)})
    if annotations.get("destructiveHint") is True:
        implied = SideEffect.DESTRUCTIVE
    return implied if SIDE_EFFECT_RANK[implied] > SIDE_EFFECT_RANK[declared] else declared


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def contract_from_descriptor(defn: UpstreamDefinition, descriptor: Mapping[str, Any],
                             version: Version) -> ToolSpec:
    """The contract ``version`` of the upstream tool ``descriptor`` describes. The title is the
    upstream's ``title``, else ``annotations.title``, else the tool's name; the description is
    the upstream's, else the title (a contract needs one). ContractError
    ``upstream.tool_invalid`` (``data``: upstream, tool, path, rule) when the descriptor does
    not make a valid contract."""
    tool = descriptor.get("name")
    tool_name = tool if isinstance(tool, str) else ""
    override = defn.override(tool_name)
    title = (_text(descriptor.get("title")) or _text(_annotations(descriptor).get("title"))
             or tool_name)
    side_effect = side_effect_of(override.side_effect or defn.side_effect, descriptor)
    mapping: dict[str, Any] = {
        "name": defn.exposed_name(tool_name),
        "version": str(version),
        "title": title,
        "description": _text(descriptor.get("description")) or title,
        "inputSchema": descriptor.get("inputSchema"),
        "dataClassification": (override.classification or defn.classification).value,
        "sideEffect": side_effect.value,
        "tenants": sorted(override.tenants if override.tenants is not None else defn.tenants),
        "requiredScopes": sorted(override.scopes if override.scopes is not None
                                 else defn.scopes),
    }
    if descriptor.get("outputSchema") is not None:
        mapping["outputSchema"] = descriptor["outputSchema"]
    try:
        if not tool_name:
            raise ContractError("$.name: the upstream tool has no name", code="contract.name",
                                path="$.name")
        return spec_from_mapping(mapping)
    except ContractError as exc:
        raise ContractError(
            f"upstream {defn.name!r} tool {tool_name!r} is not a valid contract: {exc.message}",
            code="upstream.tool_invalid", path=exc.path,
            data={"upstream": defn.name, "tool": tool_name, "path": exc.path,
                  "rule": exc.code}) from None
