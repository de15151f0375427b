"""Upstream MCP servers under contract (issue 22): their declaration, import, drift quarantine,
approval, and the forwarding of calls to them."""

from toolkeeper.upstreams.model import (
    DRIFT_CLASSES,
    DriftAction,
    DriftPolicy,
    ToolOverride,
    UpstreamBinding,
    UpstreamDefinition,
)

__all__ = [
    "DRIFT_CLASSES",
    "DriftAction",
    "DriftPolicy",
    "ToolOverride",
    "UpstreamBinding",
    "UpstreamDefinition",
]
