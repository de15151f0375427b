"""``toolkeeper calls``: the durable call log, newest first (SPEC 3.4 step 4).

Reads the registry's ``calls`` table read-only (never migrates or writes it, like the other
read commands). Filters: ``--tool``, ``--tenant``, ``--outcome``, ``--since`` (an ISO-8601 UTC
time such as ``2026-01-31T12:00:00Z``, or an age: ``90s``, ``15m``, ``2h``, ``7d``), at most
``--limit`` rows. Exit 0 (also when nothing matches), 2 for bad input or an unusable registry.

``--refused`` reads the refusal log instead (the ``refusals`` table: calls refused before
dispatch, docs/refusal-log.md) with the same filters, ``--reason`` in place of ``--outcome``.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Mapping
from types import MappingProxyType

import click

from toolkeeper.cli.output import echo_json, fail
from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry.call_rows import (
    CallQuery,
    CallRow,
    RefusalQuery,
    RefusalRow,
    open_call_rows,
    open_refusal_rows,
)
from toolkeeper.registry.location import ENV_VAR

__all__ = ["register"]

_AGE = re.compile(r"^(\d{1,9})([smhd])$")
_UNIT_S: Mapping[str, int] = MappingProxyType({"s": 1, "m": 60, "h": 3600, "d": 86_400})
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MICROSECOND = _dt.timedelta(microseconds=1)
OUTCOMES = ("ok", "error", "exception", "invalid_output", "protocol_error", "cancelled",
            "timeout", "input_required")


def duration_s(text: str, option: str) -> int:
    """The seconds an age such as ``90s``, ``15m``, ``2h`` or ``7d`` names (ToolkeeperError
    ``cli.duration_invalid`` naming ``option``)."""
    age = _AGE.match(text)
    if age is None:
        raise ToolkeeperError(f"{option} {text!r} is not a duration such as 90s, 15m, 2h or 7d",
                              code="cli.duration_invalid", data={"option": option})
    return int(age.group(1)) * _UNIT_S[age.group(2)]


def since_bound(text: str, now_ns: int) -> int:
    """The ``at`` lower bound ``--since`` names, in microseconds since the epoch
    (ToolkeeperError ``cli.since_invalid``)."""
    age = _AGE.match(text)
    if age is not None:
        return now_ns // 1000 - int(age.group(1)) * _UNIT_S[age.group(2)] * 10**6
    try:
        moment = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ToolkeeperError(f"--since {text!r} is neither an ISO-8601 time nor an age "
                              "such as 15m, 2h or 7d", code="cli.since_invalid",
                              data={"since": text}) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return (moment - _EPOCH) // _MICROSECOND


def window_bounds(since: str, until: str | None) -> tuple[int, int]:
    """``--since`` and ``--until`` (default: now) as microseconds since the epoch
    (ToolkeeperError ``cli.option_conflict`` when ``--until`` is before ``--since``)."""
    now_ns = time.time_ns()
    start = since_bound(since, now_ns)
    end = now_ns // 1000 if until is None else since_bound(until, now_ns)
    if end < start:
        raise ToolkeeperError("--until is before --since", code="cli.option_conflict",
                              data={"option": "--until"})
    return start, end


@click.command("calls")
@click.option("--tool", default=None, help="Only calls of this tool.")
@click.option("--tenant", default=None, help="Only calls by this tenant.")
@click.option("--outcome", type=click.Choice(OUTCOMES), default=None,
              help="Only calls that ended so.")
@click.option("--refused", is_flag=True, help="Refused calls (the refusal log) instead.")
@click.option("--reason", default=None, metavar="CODE",
              help="With --refused: only refusals for this reason code.")
@click.option("--since", default=None, metavar="TIME|AGE",
              help="Only calls dispatched since: ISO-8601 (UTC if no zone) or 90s, 15m, 2h, 7d.")
@click.option("--limit", type=click.IntRange(1, 1_000_000), default=100, show_default=True,
              help="At most this many calls, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--registry", "registry_url", envvar=ENV_VAR, default=None, metavar="URL",
              help=f"sqlite:///path.db or postgresql://... (env {ENV_VAR}).")
def calls_cmd(tool: str | None, tenant: str | None, outcome: str | None, refused: bool,
              reason: str | None, since: str | None, limit: int, as_json: bool,
              registry_url: str | None) -> None:
    """Dispatched tool calls from the durable call log, newest first (--refused: the calls
    refused before dispatch)."""
    try:
        if refused and outcome is not None:
            raise ToolkeeperError("--outcome filters dispatched calls; with --refused use "
                                  "--reason", code="cli.option_conflict", data={"option": "--outcome"})
        if reason is not None and not refused:
            raise ToolkeeperError("--reason filters refused calls: add --refused",
                                  code="cli.option_conflict", data={"option": "--reason"})
        bound = None if since is None else since_bound(since, time.time_ns())
        if refused:
            found: list[CallRow] | list[RefusalRow] = _refusals(
                registry_url, RefusalQuery(tool, tenant, reason, bound, limit))
        else:
            found = _calls(registry_url, CallQuery(tool, tenant, outcome, bound, limit))
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    if as_json:
        echo_json([row.to_dict() for row in found])
        return
    for row in found:
        click.echo(_line(row))


def _calls(registry_url: str | None, query: CallQuery) -> list[CallRow]:
    rows = open_call_rows(registry_url, read_only=True)
    try:
        return rows.query(query)
    finally:
        rows.close()


def _refusals(registry_url: str | None, query: RefusalQuery) -> list[RefusalRow]:
    rows = open_refusal_rows(registry_url, read_only=True)
    try:
        return rows.query(query)
    finally:
        rows.close()


def _line(row: CallRow | RefusalRow) -> str:
    if isinstance(row, RefusalRow):
        who = "-" if row.tenant is None else row.tenant
        if row.credential is not None:
            who = f"{who}/{row.credential}"
        return (f"{row.at} {row.tool or '-'} {row.version or '-'} {row.reason} {who} "
                f"{row.era or '-'}")
    who = row.tenant if row.credential is None else f"{row.tenant}/{row.credential}"
    return (f"{row.at} {row.tool} {row.version} {row.outcome} {row.latency_ms:.1f}ms "
            f"{who} {row.era}")


def register(group: click.Group) -> None:
    group.add_command(calls_cmd)
