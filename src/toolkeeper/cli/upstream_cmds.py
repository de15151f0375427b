"""Upstream commands: ``toolkeeper upstream add|list|sync|diff|approve|reject`` (issue 22).

Upstreams live in the registry store (``--registry URL`` / ``TOOLKEEPER_REGISTRY``, as for the
registry commands), so every gateway replica on that registry serves the same ones; ``memory:``
is refused (``registry.memory_refused``: what it keeps is gone when the command exits).
``add`` stores a definition (the registry is made when it is not there); ``sync`` lists the
upstream's tools now and applies them (import, drift published or quarantined per policy);
``diff`` shows each pending drift (the classifier's changes with their paths, the description's
text diff, the new descriptor digest); ``approve`` publishes exactly the descriptor the digest
names, ``reject`` keeps the contract in force; both record who (``--actor``, default the
operating-system user as ``os:NAME``) and when. ``approve --rollout POLICY --evidence BUNDLE``
rolls the published version out against the version in force as ``release start`` does
(:mod:`toolkeeper.cli.upstream_rollout`: what is refused before anything is written, and a
start refused after the publication, ``upstream.rollout_not_started``).

Exit codes: 0 done; 1 refused (no such upstream, a wrong or stale digest, the upstream busy
syncing elsewhere; a ``sync`` that left a listed tool unimported, whose report, printed in full,
says which and why); 2 bad input (a bad definition, an unusable registry, an upstream that
cannot be reached or read). Under ``--json`` an error is ``{"error": {code, message, data}}``
on stdout.
"""

from __future__ import annotations

import asyncio
import getpass
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import click

from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.release_cmds import REFUSED_CODES, plan_start, rollout_json, rollout_line
from toolkeeper.cli.upstream_rollout import NOT_STARTED, approve_rolled_out
from toolkeeper.cli.usage import ToolkeeperGroup
from toolkeeper.contracts.spec import DataClassification, SideEffect
from toolkeeper.errors import NotFoundError, StoreError, ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.registry.location import ENV_VAR, default_url
from toolkeeper.registry.upstream_records import DriftRecord, UpstreamRecord
from toolkeeper.upstreams.drift import description_diff
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.health_record import record_reset, summary
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.report import NOT_IMPORTED, SyncReport
from toolkeeper.upstreams.sync import sync

__all__ = ["register"]

F = TypeVar("F", bound=Callable[..., Any])
_REFUSED_CODES = frozenset({"upstream.digest_mismatch", "upstream.sync_busy", "upstream.exists",
                            NOT_STARTED, *REFUSED_CODES})


def _options(func: F) -> F:
    func = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(func)
    return click.option("--registry", "registry_url", envvar=ENV_VAR, default=None,
                        metavar="URL", help="sqlite:///path.db or postgresql://... (memory: is "
                        f"refused; env {ENV_VAR}; default: a SQLite file in the user data dir)."
                        )(func)


def _actor_option(func: F) -> F:
    return click.option("--actor", default=None, metavar="WHO",
                        help="Who is recorded (an operator identity or an API key id; default "
                        "os:<your user name>).")(func)


def _fail(error: ToolkeeperError, as_json: bool) -> NoReturn:
    refused = isinstance(error, NotFoundError) or error.code in _REFUSED_CODES
    fail(error, as_json=as_json, code=EXIT_REFUSED if refused else EXIT_BAD_INPUT)


def _who(actor: str | None) -> str:
    if actor:
        return actor
    try:
        return f"os:{getpass.getuser()}"
    except (KeyError, OSError):
        return "os:unknown"


@contextmanager
def _upstreams(url: str | None, as_json: bool, *, create: bool = False,
               read_only: bool = False) -> Iterator[Upstreams]:
    """The upstreams of the registry at ``url``; every ToolkeeperError inside is reported."""
    scheme, sep, _ = (url if url is not None else default_url()).strip().partition(":")
    if sep and scheme.lower() == "memory":
        _fail(ToolkeeperError("upstreams need a registry that outlives the command: memory: "
                              "keeps nothing", code="registry.memory_refused",
                              data={"scheme": "memory"}), as_json)
    try:
        registry = Registry.open(url, create=create, read_only=read_only)
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    try:
        yield Upstreams(registry)
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    finally:
        registry.close()


def _record_dict(record: UpstreamRecord) -> dict[str, Any]:
    return {"name": record.name, "definition": dict(record.definition), "origin": record.origin,
            "created": record.created, "updated": record.updated}


@click.group("upstream", cls=ToolkeeperGroup)
def upstream_group() -> None:
    """Upstream MCP servers under contract: import, drift quarantine, approval."""


@upstream_group.command("add")
@click.argument("name")
@click.option("--url", default=None, help="The upstream's Streamable HTTP endpoint.")
@click.option("--command", "command", default=None, metavar='"CMD ARGS"',
              help="The stdio command that starts the upstream (split as a shell would).")
@click.option("--prefix", default="", help="Prefix of the exposed names (prefix + tool name).")
@click.option("--classification", type=click.Choice([c.value for c in DataClassification]),
              default="internal", show_default=True)
@click.option("--side-effect", "side_effect", type=click.Choice([s.value for s in SideEffect]),
              default="write", show_default=True,
              help="The tools' side effect (an annotation may raise it, never lower it).")
@click.option("--tenant", "tenants", multiple=True, help="A tenant that sees the tools.")
@click.option("--scope", "scopes", multiple=True, help="A scope the tools require.")
@click.option("--token-file", default=None, help="A file holding the upstream's bearer token.")
@click.option("--header-file", default=None, help="A file of 'Name: value' header lines.")
@click.option("--era", type=click.Choice(["auto", "modern", "legacy"]), default="auto",
              show_default=True)
@_actor_option
@_options
def add_cmd(name: str, url: str | None, command: str | None, prefix: str, classification: str,
            side_effect: str, tenants: tuple[str, ...], scopes: tuple[str, ...],
            token_file: str | None, header_file: str | None, era: str, actor: str | None,
            registry_url: str | None, as_json: bool) -> None:
    """Put the MCP server NAME under governance (its tools are imported by ``sync``)."""
    try:
        argv = tuple(shlex.split(command)) if command is not None else None
        defn = UpstreamDefinition(
            name=name, url=url, command=argv, prefix=prefix,
            classification=DataClassification(classification),
            side_effect=SideEffect(side_effect), tenants=tenants, scopes=scopes,
            token_file=token_file, header_file=header_file, era=era)
    except ValueError as exc:
        _fail(ToolkeeperError(f"--command: {exc}", code="upstream.invalid",
                              data={"key": "command"}), as_json)
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    with _upstreams(registry_url, as_json, create=True) as ups:
        record = ups.add(defn, origin="cli", actor=_who(actor))
    if as_json:
        echo_json(_record_dict(record))
    else:
        click.echo(f"upstream {record.name} stored ({defn.transport}); "
                   f"`toolkeeper upstream sync {record.name}` imports its tools")


@upstream_group.command("remove")
@click.argument("name")
@_options
def remove_cmd(name: str, registry_url: str | None, as_json: bool) -> None:
    """Stop governing NAME: its row, its tools' bindings and its health views are forgotten, so
    a gateway started on this registry afterwards neither runs it nor serves its tools (their
    contracts and the approval records stay). An upstream a gateway's ``[[upstreams]]``
    declares is stored again when that gateway starts."""
    with _upstreams(registry_url, as_json) as ups:
        tools = sum(1 for t in ups.tools(name) if t.present) if name in ups.names() else 0
        if not ups.remove(name):
            raise NotFoundError(f"no upstream {name!r}", code="upstream.not_found",
                                data={"upstream": name})
    if as_json:
        echo_json({"name": name, "removed": True, "tools": tools})
    else:
        click.echo(f"upstream {name} removed; its {tools} tools are no longer served "
                   "(their contracts stay in the registry)")


def _summary(ups: Upstreams, name: str) -> dict[str, Any]:
    try:
        defn = ups.definition(name)
        tools = ups.tools(name)
        pending = ups.pending(name)
        health = summary(ups.health(name))
    except StoreError as exc:
        return {"name": name, "state": "unreadable", "code": exc.code}
    seen = [r for r in health["replicas"] if r.get("era") not in (None, "auto")]
    return {"name": name, "state": "ok", "transport": defn.transport,
            "era": seen[0]["era"] if seen else defn.era, "prefix": defn.prefix,
            "tools": sum(1 for t in tools if t.present),
            "missing": sum(1 for t in tools if not t.present), "pending": len(pending),
            **health}


@upstream_group.command("list")
@_options
def list_cmd(registry_url: str | None, as_json: bool) -> None:
    """Every upstream: transport, era, health and breaker (as the serving gateways last
    recorded them), restarts, tools in force, tools gone, pending drifts."""
    with _upstreams(registry_url, as_json, read_only=True) as ups:
        rows = [_summary(ups, name) for name in ups.names()]
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        if row["state"] != "ok":
            click.echo(f"{row['name']} [{row['code']}]")
        else:
            click.echo(f"{row['name']} {row['transport']} era={row['era']}"
                       f" health={row['health']} breaker={row['breaker']}"
                       f" restarts={row['restarts']} tools={row['tools']}"
                       f" missing={row['missing']} pending={row['pending']}")


def _echo_report(report: SyncReport) -> None:
    for outcome in report.tools:
        code = f" [{outcome.code}]" if outcome.code else ""
        version = f" {outcome.version}" if outcome.version else ""
        click.echo(f"{outcome.exposed}{version} {outcome.action}{code}")
        if outcome.action == "quarantined" and outcome.digest:
            click.echo(f"  pending: toolkeeper upstream approve {report.upstream} "
                       f"{outcome.tool} --digest {outcome.digest}")


@upstream_group.command("sync")
@click.argument("name")
@_actor_option
@_options
def sync_cmd(name: str, actor: str | None, registry_url: str | None, as_json: bool) -> None:
    """List NAME's tools now and apply them (publish, or quarantine per its drift policy);
    a serving gateway that has NAME failed after a crash loop serves it again."""
    with _upstreams(registry_url, as_json) as ups:
        report = asyncio.run(sync(ups, name, actor=_who(actor)))
        record_reset(ups, name, _who(actor))  # a failed upstream is served again
    if as_json:
        echo_json(report.to_dict())
    else:
        _echo_report(report)
    if any(outcome.action in NOT_IMPORTED for outcome in report.tools):
        raise SystemExit(EXIT_REFUSED)  # the report says which and why


def _drift_dict(drift: DriftRecord) -> dict[str, Any]:
    out = drift.to_dict()
    out["descriptionDiff"] = description_diff(drift.previous_descriptor, drift.new_descriptor)
    return out


@upstream_group.command("diff")
@click.argument("name")
@click.argument("tool", required=False)
@_options
def diff_cmd(name: str, tool: str | None, registry_url: str | None, as_json: bool) -> None:
    """Each pending drift of NAME (of TOOL): changes with paths, description diff, digest."""
    with _upstreams(registry_url, as_json, read_only=True) as ups:
        pending = ups.pending(name, tool)
    if as_json:
        echo_json([_drift_dict(d) for d in pending])
        return
    if not pending:
        click.echo(f"no pending drift of {name}" + (f"/{tool}" if tool else ""))
    for drift in pending:
        click.echo(f"{drift.upstream}/{drift.tool}: {drift.level} "
                   f"[{', '.join(drift.classes)}] seen {drift.seen_at}")
        for change in drift.changes:
            click.echo(f"  {change['path']} [{change['rule']}]")
        text = description_diff(drift.previous_descriptor, drift.new_descriptor)
        if text:
            click.echo("".join(f"  {line}" for line in text.splitlines(keepends=True)), nl=False)
        click.echo(f"  digest {drift.new_digest} (in force: {drift.previous_digest})")


def _decide(verb: str, name: str, tool: str, digest: str, actor: str | None,
            registry_url: str | None, as_json: bool) -> None:
    with _upstreams(registry_url, as_json) as ups:
        decide = ups.approve if verb == "approve" else ups.reject
        decided = decide(name, tool, digest, actor=_who(actor))
    if as_json:
        echo_json(decided.to_dict())
    elif decided.published_version is not None:
        click.echo(f"approved {name}/{tool}: published {decided.published_version} "
                   f"(by {decided.decided_by} at {decided.decided_at})")
    else:
        click.echo(f"rejected {name}/{tool}: the contract in force stays "
                   f"(by {decided.decided_by} at {decided.decided_at})")


@upstream_group.command("approve")
@click.argument("name")
@click.argument("tool")
@click.option("--digest", required=True, help="The new descriptor digest `upstream diff` shows.")
@click.option("--rollout", "policy_path", default=None, metavar="POLICY",
              help="Roll the published version out under this health-window policy, as "
                   "`release start` does, instead of publishing it to every caller at once.")
@click.option("--evidence", "evidence_path", default=None, metavar="BUNDLE",
              help="With --rollout: the pre-rollout evidence bundle (`toolkeeper gate bundle`).")
@click.option("--steps", "steps_text", default="5,25,50,100", show_default=True,
              metavar="P,P,...", help="With --rollout: the share at each step, percent, to 100.")
@click.option("--interval", "interval_text", default="5m", show_default=True,
              metavar="DURATION", help="With --rollout: each evaluation interval (30s, 5m, 1h).")
@click.option("--max-holds", type=click.IntRange(1, 1000), default=6, show_default=True,
              help="With --rollout: consecutive holds at one step after which it halts.")
@click.option("--health-since", default="1h", show_default=True, metavar="TIME|AGE",
              help="With --rollout: the start of the target's call-log window that must be "
                   "healthy.")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="With --rollout: the configuration whose [gate] names the keys.")
@_actor_option
@_options
def approve_cmd(name: str, tool: str, digest: str, policy_path: str | None,
                evidence_path: str | None, steps_text: str, interval_text: str, max_holds: int,
                health_since: str, config_path: str | None, actor: str | None,
                registry_url: str | None, as_json: bool) -> None:
    """Publish exactly the pending descriptor DIGEST names, as the next version (with
    --rollout: rolled out step by step against the version in force)."""
    if policy_path is None and evidence_path is None:
        _decide("approve", name, tool, digest, actor, registry_url, as_json)
        return
    try:
        if policy_path is None or evidence_path is None:
            missing = "--rollout" if policy_path is None else "--evidence"
            raise ToolkeeperError(f"a rolled-out approval needs --rollout POLICY and --evidence "
                                  f"BUNDLE ({missing} is missing)", code="cli.option_missing",
                                  data={"option": missing})
        plan = plan_start(policy_path, evidence_path, steps_text, interval_text,
                          max_holds=max_holds, health_since=health_since, actor=_who(actor),
                          config_path=config_path)
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    with _upstreams(registry_url, as_json) as ups:
        decided, rollout = approve_rolled_out(ups, registry_url, name, tool, digest, plan)
    if as_json:
        echo_json({**decided.to_dict(), "rollout": rollout_json(rollout)})
    else:
        click.echo(f"approved {name}/{tool}: published {decided.published_version} "
                   f"(by {decided.decided_by} at {decided.decided_at})")
        click.echo(f"rolling out {rollout_line(rollout)}")


@upstream_group.command("reject")
@click.argument("name")
@click.argument("tool")
@click.option("--digest", required=True, help="The new descriptor digest `upstream diff` shows.")
@_actor_option
@_options
def reject_cmd(name: str, tool: str, digest: str, actor: str | None, registry_url: str | None,
               as_json: bool) -> None:
    """Keep the contract in force and record the pending drift DIGEST names as rejected."""
    _decide("reject", name, tool, digest, actor, registry_url, as_json)


def register(group: click.Group) -> None:
    """Add the ``upstream`` group to ``group``."""
    group.add_command(upstream_group)

