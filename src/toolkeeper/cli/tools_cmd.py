"""``toolkeeper tools``: the tools an MCP endpoint lists, with their contract versions.

``toolkeeper tools --url URL`` (or ``tools URL``) or ``toolkeeper tools --stdio "CMD ARG..."``
(or ``--stdio -- CMD ARG...``; :mod:`toolkeeper.cli.targets`); ``--era`` picks the
selection policy (SPEC 5.1). An endpoint named on the command line is explicitly configured,
so ``auto`` (the default) may give it the bounded legacy probe: one modern
``server/discover``, and only when that is inconclusive one legacy ``initialize``.
``--strict`` (or ``--era modern``) needs proof of the modern era and refuses the fallback;
``--era legacy`` skips the modern probe. A refusal names what would change it
(``data.remedy``).

Each tool's version is its descriptor's ``_meta.schemaVersion``, or null when the server
publishes none (never invented); ``--json`` gives its ``annotations`` too (null when none).
A tool the client dropped (a malformed descriptor: no non-empty name, a name already listed,
an ``inputSchema`` that is not an object schema; in the modern era also an invalid
``x-mcp-header`` annotation, mcp-wire 4.3) is shown: in ``--json`` under ``dropped`` (name,
path, reason), in text as a ``# dropped`` line each; a listed tool without a description is
named the same way under ``warnings`` (``# warning`` lines). Exit 0 when listed, 2 on a
protocol or connection failure (the error's code, and with ``--json`` its data, such as the
era decision).
"""

from __future__ import annotations

import asyncio
from typing import Any

import click

from toolkeeper.cli.output import echo_json, fail
from toolkeeper.cli.targets import client_options, era_policy, target_of
from toolkeeper.client import ClientSession, Target, ToolListing, connect
from toolkeeper.errors import ClientError

__all__ = ["register", "tool_version"]


def tool_version(descriptor: dict[str, Any]) -> str | None:
    """``_meta.schemaVersion`` when it is a string, else None."""
    meta = descriptor.get("_meta")
    version = meta.get("schemaVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _annotations(descriptor: dict[str, Any]) -> dict[str, Any] | None:
    """The descriptor's ``annotations`` object (``readOnlyHint`` and the like, which the
    conformance harness reads to pick a read-only tool), or None when it has none."""
    annotations = descriptor.get("annotations")
    return annotations if isinstance(annotations, dict) else None


async def _list(target: Target, era: Any, token: str | None, allow_legacy: bool
                ) -> tuple[ClientSession, ToolListing]:
    async with await connect(target, era=era, token=token,
                             legacy_allowed=allow_legacy) as session:
        return session, await session.list_tools()


@click.command("tools")
@client_options
def tools_cmd(target: tuple[str, ...], url: str | None, stdio: str | None, era: str,
              strict: bool, allow_legacy: bool, token: str | None, as_json: bool) -> None:
    """The tools an MCP endpoint lists, with their versions."""
    try:
        choice, allowed = era_policy(era, strict, allow_legacy)
        session, listing = asyncio.run(_list(target_of(target, stdio, url), choice, token,
                                             allowed))
    except ClientError as exc:
        fail(exc, as_json=as_json)
    rows = [{"name": tool.get("name"), "title": tool.get("title"),
             "schemaVersion": tool_version(tool), "annotations": _annotations(tool)}
            for tool in listing.tools]
    if as_json:
        echo_json({"era": session.version, "decision": session.decision.to_json(),
                   "tools": rows, "dropped": [dict(d) for d in listing.dropped],
                   "warnings": [dict(w) for w in listing.warnings]})
        return
    click.echo(f"# era {session.version} ({session.decision.verdict})")
    for row in rows:
        click.echo(f"{row['name']}\t{row['schemaVersion'] or '-'}\t{row['title'] or ''}")
    for dropped in listing.dropped:
        click.echo(f"# dropped {dropped['name']}\t{dropped['path']}\t{dropped['reason']}")
    for warning in listing.warnings:
        click.echo(f"# warning {warning['name']}\t{warning['path']}\t{warning['reason']}")


def register(group: click.Group) -> None:
    group.add_command(tools_cmd)
