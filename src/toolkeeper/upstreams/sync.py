"""Sync: list an upstream's tools through the one MCP client and apply the listing.

:func:`fetch_listing` connects to the upstream (its URL in the definition's era selection, the
legacy fallback allowed since a configured upstream is an explicitly configured endpoint; or
its stdio command), sends the credential of its ``token_file`` (or the bearer token of an
``Authorization`` line of its ``header_file``), and lists every page. :func:`sync` holds the
store's sync lock for the upstream (one sync at a time: ``upstream.sync_busy`` otherwise),
fetches and hands the tools to :meth:`Upstreams.apply_listing
<toolkeeper.upstreams.governance.Upstreams.apply_listing>`. Descriptors the client drops as
malformed (no name, an input schema that is not an object schema) are reported as
``invalid`` outcomes (``upstream.tool_invalid``), as a contract refused would be.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from toolkeeper.client import ClientSession, ClientTimeouts, Target, ToolListing, connect
from toolkeeper.client.connect import EraChoice
from toolkeeper.errors import ConfigError
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.report import SyncReport, ToolOutcome

__all__ = ["fetch_listing", "fetch_tools", "sync", "upstream_token"]


def upstream_token(defn: UpstreamDefinition) -> str | None:
    """The bearer token this upstream receives: the stripped content of ``token_file``, or the
    token of a ``Authorization: Bearer ...`` line of ``header_file``; None for neither. A file
    that cannot be read is ConfigError ``upstream.credential_unreadable`` (its content is never
    quoted)."""
    path = defn.token_file or defn.header_file
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"upstream {defn.name!r}: cannot read {path}: {type(exc).__name__}",
                          code="upstream.credential_unreadable",
                          data={"upstream": defn.name, "file": path}) from None
    if defn.token_file is not None:
        return text.strip() or None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "authorization" and value.strip().lower().startswith("bearer "):
            return value.strip()[len("bearer "):].strip() or None
    return None


def _target(defn: UpstreamDefinition) -> Target:
    if defn.url is not None:
        return Target.from_url(defn.url)
    assert defn.command is not None
    return Target.from_stdio(defn.command)


async def fetch_listing(defn: UpstreamDefinition, *, timeouts: ClientTimeouts | None = None
                        ) -> ToolListing:
    """Every page of the upstream's ``tools/list`` (raises the client's errors)."""
    session: ClientSession = await connect(
        _target(defn), era=cast(EraChoice, defn.era), token=upstream_token(defn),
        legacy_allowed=True, timeouts=timeouts or ClientTimeouts(request_s=defn.call_timeout_s))
    try:
        return await session.list_tools()
    finally:
        await session.aclose()


async def fetch_tools(defn: UpstreamDefinition, *, timeouts: ClientTimeouts | None = None
                      ) -> list[dict[str, Any]]:
    """The tool descriptors of every page the upstream lists."""
    return (await fetch_listing(defn, timeouts=timeouts)).tools


async def sync(upstreams: Upstreams, name: str, *, actor: str,
               timeouts: ClientTimeouts | None = None) -> SyncReport:
    """Fetch the upstream's listing and apply it, holding its sync lock throughout."""
    defn = upstreams.definition(name)
    with upstreams.sync_lock(name):
        listing = await fetch_listing(defn, timeouts=timeouts)
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
