"""Sync: list an upstream's tools through the one MCP client and apply the listing.

:func:`fetch_listing` connects to the upstream (its URL in the definition's era selection, the
legacy fallback allowed since a configured upstream is an explicitly configured endpoint; or
its stdio command), sends the credential headers of its ``token_file`` or ``header_file``
(:mod:`~toolkeeper.upstreams.credentials`, as a forwarded call sends them), and lists every
page. :func:`sync` holds the
store's sync lock for the upstream (one sync at a time: ``upstream.sync_busy`` otherwise),
fetches and hands the tools to :meth:`Upstreams.apply_listing
<toolkeeper.upstreams.governance.Upstreams.apply_listing>`. Descriptors the client drops as
malformed (no name, an input schema that is not an object schema) are reported as
``invalid`` outcomes (``upstream.tool_invalid``), as a contract refused would be.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from toolkeeper.client import ToolListing
from toolkeeper.upstreams.connections import open_session
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.report import SyncReport, ToolOutcome

__all__ = ["fetch_listing", "fetch_tools", "sync"]


async def fetch_listing(defn: UpstreamDefinition) -> ToolListing:
    """Every page of the upstream's ``tools/list`` (raises the client's errors), over a session
    opened as the forwarding opens one (:func:`~toolkeeper.upstreams.connections.open_session`:
    the same era selection, bounds and credential headers)."""
    session = await open_session(defn)
    try:
        return await session.list_tools()
    finally:
        await session.aclose()


async def fetch_tools(defn: UpstreamDefinition) -> list[dict[str, Any]]:
    """The tool descriptors of every page the upstream lists."""
    return (await fetch_listing(defn)).tools


async def sync(upstreams: Upstreams, name: str, *, actor: str) -> SyncReport:
    """Fetch the upstream's listing and apply it, holding its sync lock throughout."""
    defn = upstreams.definition(name)
    with upstreams.sync_lock(name):
        listing = await fetch_listing(defn)
        report = upstreams.apply_listing(name, listing.tools, actor=actor)
    dropped = tuple(
        ToolOutcome(d.get("name", ""), defn.exposed_name(d.get("name", "")), "invalid",
                    code="upstream.tool_invalid",
                    data={"upstream": name, "tool": d.get("name", ""), "path": d.get("path"),
                          "reason": d.get("reason")})
        for d in listing.dropped)
    if not dropped:
        return report
    return replace(report, tools=tuple(sorted((*report.tools, *dropped), key=lambda o: o.tool)))
