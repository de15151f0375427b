"""Upstream MCP servers under contract (issue 22): their declaration, import, drift quarantine,
approval, and the forwarding of calls to them.

The governance half: :class:`Upstreams` (stored definitions, import, drift published or
quarantined per policy, approve/reject by descriptor digest, the bindings the gateway runs),
:func:`sync` (list an upstream through the MCP client and apply it), the descriptor digest
(:func:`descriptor_digest`) and the drift classification (:func:`classify_drift`)."""

from toolkeeper.upstreams.descriptor import (
    contract_from_descriptor,
    descriptor_digest,
    normalized_descriptor,
    upstream_version,
)
from toolkeeper.upstreams.drift import RISK_LOWERED, Drift, classify_drift, next_version
from toolkeeper.upstreams.governance import FIRST_VERSION, Upstreams
from toolkeeper.upstreams.model import (
    DRIFT_CLASSES,
    DriftAction,
    DriftPolicy,
    ToolOverride,
    UpstreamBinding,
    UpstreamDefinition,
)
from toolkeeper.upstreams.report import SyncReport, ToolOutcome
from toolkeeper.upstreams.scheduler import SyncScheduler
from toolkeeper.upstreams.sync import fetch_listing, fetch_tools, sync

__all__ = [
    "DRIFT_CLASSES",
    "FIRST_VERSION",
    "RISK_LOWERED",
    "Drift",
    "DriftAction",
    "DriftPolicy",
    "SyncReport",
    "SyncScheduler",
    "ToolOutcome",
    "ToolOverride",
    "UpstreamBinding",
    "UpstreamDefinition",
    "Upstreams",
    "classify_drift",
    "contract_from_descriptor",
    "descriptor_digest",
    "fetch_listing",
    "fetch_tools",
    "next_version",
    "normalized_descriptor",
    "sync",
    "upstream_version",
]
