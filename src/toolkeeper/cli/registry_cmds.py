"""Registry commands: publish (and ``--dry-run``), show, versions, deprecate, retire, discover,
audit (SPEC 2).

Every command takes ``--registry URL`` (or ``TOOLKEEPER_REGISTRY``; default: the SQLite file in
the user data directory; an empty URL is an error, never the default). Exit codes: 0 done, 1 the
registry refused (publish guard, lifecycle rule, unknown tool or version), 2 bad input
(unreadable or malformed file, bad version or clearance, unusable registry URL, unreachable
store, or a store that is not a toolkeeper registry: missing, empty, damaged, another
program's database, or from a newer toolkeeper).

Only ``publish`` creates a registry. ``deprecate`` and ``retire`` change one that exists;
``versions``, ``discover``, ``audit``, ``show`` and ``publish --dry-run`` open it read-only
and never write to it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

import click

from toolkeeper.cli.documents import read_document
from toolkeeper.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_REFUSED,
    change_lines,
    echo_json,
    fail,
    refusal_json,
)
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.classify import classify
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping, spec_to_mapping
from toolkeeper.errors import (
    LifecycleError,
    NotFoundError,
    PublishRefusedError,
    ToolkeeperError,
)
from toolkeeper.registry import Principal, Registry
from toolkeeper.registry.guard import check_publish
from toolkeeper.registry.location import ENV_VAR

__all__ = ["register", "stored_contract"]

F = TypeVar("F", bound=Callable[..., Any])

# Which errors are the registry saying no (exit 1); everything else is bad input (exit 2).
_EXIT_CODES: Mapping[type[ToolkeeperError], int] = MappingProxyType({
    PublishRefusedError: EXIT_REFUSED,
    LifecycleError: EXIT_REFUSED,
    NotFoundError: EXIT_REFUSED,
})


def _exit_code(error: ToolkeeperError) -> int:
    for kind, code in _EXIT_CODES.items():
        if isinstance(error, kind):
            return code
    return EXIT_BAD_INPUT


def _report(error: ToolkeeperError, as_json: bool) -> NoReturn:
    code = _exit_code(error)
    if isinstance(error, PublishRefusedError):
        if as_json:
            echo_json(refusal_json(error))
        else:
            click.echo(f"refused: {error.message} [{error.code}]", err=True)
            for line in change_lines(error):
                click.echo(line, err=True)
        sys.exit(code)
    fail(error, as_json=as_json, code=code)


def _options(func: F) -> F:
    func = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(func)
    return click.option("--registry", "registry_url", envvar=ENV_VAR, default=None,
                        metavar="URL", help="sqlite:///path.db, postgresql://... or memory: "
                        f"(env {ENV_VAR}; default: a SQLite file in the user data dir).")(func)


@contextmanager
def _registry(url: str | None, as_json: bool, *, create: bool = True, read_only: bool = False
              ) -> Iterator[Registry]:
    """The registry. Commands that can only change what is there pass ``create=False``, and
    commands that only read ``read_only=True`` (the store is never written, not even migrated),
    so a mistyped path or a file that is not a registry is an error, never a new registry."""
    try:
        registry = Registry.open(url, create=create, read_only=read_only)
    except ToolkeeperError as exc:
        _report(exc, as_json)
    try:
        yield registry
    except ToolkeeperError as exc:
        _report(exc, as_json)
    finally:
        registry.close()


def _version(text: str, as_json: bool) -> Version:
    try:
        return Version.parse(text)
    except ToolkeeperError as exc:
        _report(exc, as_json)


def _line(spec: ToolSpec) -> str:
    who = f" by {spec.publisher}" if spec.publisher else ""
    return f"{spec.name} {spec.version} [{spec.status.value}]{who}"


def _emit_record(spec: ToolSpec, as_json: bool) -> None:
    if as_json:
        echo_json(spec_to_mapping(spec))
    else:
        click.echo(_line(spec))


def _emit_records(specs: tuple[ToolSpec, ...] | list[ToolSpec], as_json: bool) -> None:
    if as_json:
        echo_json([spec_to_mapping(s) for s in specs])
    else:
        for spec in specs:
            click.echo(_line(spec))


@click.command("publish")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--actor", default="anonymous", show_default=True, help="Recorded in the audit.")
@click.option("--dry-run", is_flag=True,
              help="Run the guard against the stored history and print the verdict; store "
                   "nothing (the registry is opened read-only).")
@_options
def publish_cmd(files: tuple[str, ...], actor: str, dry_run: bool, registry_url: str | None,
                as_json: bool) -> None:
    """Publish contract files (JSON or YAML) under the guard, in order; stop at a refusal.

    With --json, prints each stored record as one JSON line. With --dry-run, prints what the
    guard would decide for each file (exit 1 when it would refuse one) and stores nothing.
    """
    try:  # read and check every file before publishing any
        specs = [spec_from_mapping(read_document(path)) for path in files]
    except ToolkeeperError as exc:
        _report(exc, as_json)
    if dry_run:
        _dry_run(specs, registry_url, as_json)
        return
    with _registry(registry_url, as_json) as registry:
        for spec in specs:
            outcome = registry.publish_outcome(spec, actor=actor)
            if as_json:
                echo_json(spec_to_mapping(outcome.record))
            else:  # the guard's decision in the transaction, not a look at the store after it
                verb = "published" if outcome.created else "unchanged"
                click.echo(f"{verb} {_line(outcome.record)}")


def _dry_run(specs: list[ToolSpec], registry_url: str | None, as_json: bool) -> None:
    """Each file judged by the publish guard against the stored history of its name and the
    earlier files of the batch, as a publish would judge it; nothing is written (not even the
    audit of a refusal). A refusal is reported as ``publish`` reports it (exit 1)."""
    with _registry(registry_url, as_json, create=False, read_only=True) as registry:
        accepted: dict[str, list[ToolSpec]] = {}
        for spec in specs:
            history = [*registry.versions(spec.name), *accepted.get(spec.name, [])]
            decision = check_publish(history, spec, classify)  # raises the refusal
            verdict = decision.verdict
            if decision.existing is None:
                accepted.setdefault(spec.name, []).append(spec)
            outcome = "unchanged" if decision.existing is not None else "would publish"
            if as_json:
                echo_json({"name": spec.name, "version": str(spec.version),
                           "outcome": outcome.replace(" ", "_"),
                           "against": (str(decision.reference.version)
                                       if decision.reference is not None else None),
                           "bump": verdict.bump.value if verdict is not None else None,
                           "changes": [c.to_dict() for c in verdict.changes]
                           if verdict is not None else []})
                continue
            judged = ""
            if decision.reference is not None and verdict is not None:
                judged = f" ({verdict.bump.value.upper()} against {decision.reference.version})"
            click.echo(f"{outcome} {spec.name} {spec.version}{judged}")


def _name_at_version(reference: str, as_json: bool) -> tuple[str, Version | None]:
    name, sep, version = reference.partition("@")
    if not name or (sep and not version):
        _report(ToolkeeperError(f"{reference!r}: expected TOOL or TOOL@VERSION",
                                code="cli.tool_reference"), as_json)
    return name, _version(version, as_json) if sep else None


@click.command("show")
@click.argument("reference", metavar="TOOL[@VERSION]")
@_options
def show_cmd(reference: str, registry_url: str | None, as_json: bool) -> None:
    """Print a stored contract as canonical JSON, in the contract file form (publish and diff
    read it back): TOOL@VERSION that version (any status), TOOL the newest active one (else
    the newest of any status). Exit 1 when it is not published."""
    name, version = _name_at_version(reference, as_json)
    with _registry(registry_url, as_json, create=False, read_only=True) as registry:
        spec = stored_contract(registry, name, version)
        click.echo(canonical_json(spec_to_mapping(spec, lifecycle=False)).decode())


def stored_contract(registry: Registry, name: str, version: Version | None) -> ToolSpec:
    """The stored contract ``show`` and ``diff TOOL@A TOOL@B`` read (NotFoundError if none)."""
    if version is not None:
        found = registry.get(name, version)
        if found is None:
            raise NotFoundError(f"{name} {version} is not published",
                                data={"name": name, "version": str(version)})
        return found
    versions = registry.versions(name)
    if not versions:
        raise NotFoundError(f"{name} is not published", data={"name": name})
    latest = registry.latest(name)
    return latest if latest is not None else versions[-1]


@click.command("versions")
@click.argument("name")
@_options
def versions_cmd(name: str, registry_url: str | None, as_json: bool) -> None:
    """Every version of NAME, oldest first, retired included."""
    with _registry(registry_url, as_json, read_only=True) as registry:
        found = registry.versions(name)
        if not found:
            raise NotFoundError(f"{name} is not published", data={"name": name})
        _emit_records(found, as_json)


@click.command("deprecate")
@click.argument("name")
@click.argument("version")
@click.option("--message", default=None, help="Shown to callers of the deprecated version.")
@click.option("--successor", default=None, help="The version callers should move to.")
@click.option("--actor", default="anonymous", show_default=True, help="Recorded in the audit.")
@_options
def deprecate_cmd(name: str, version: str, message: str | None, successor: str | None,
                  actor: str, registry_url: str | None, as_json: bool) -> None:
    """Deprecate NAME VERSION (it still resolves, but is no longer the latest)."""
    parsed = _version(version, as_json)
    parsed_successor = _version(successor, as_json) if successor is not None else None
    with _registry(registry_url, as_json, create=False) as registry:
        stored = registry.deprecate(name, parsed, message=message, successor=parsed_successor,
                                    actor=actor)
        _emit_record(stored, as_json)


@click.command("retire")
@click.argument("name")
@click.argument("version")
@click.option("--actor", default="anonymous", show_default=True, help="Recorded in the audit.")
@_options
def retire_cmd(name: str, version: str, actor: str, registry_url: str | None,
               as_json: bool) -> None:
    """Retire NAME VERSION for good (kept on record, never served again)."""
    parsed = _version(version, as_json)
    with _registry(registry_url, as_json, create=False) as registry:
        stored = registry.retire(name, parsed, actor=actor)
        _emit_record(stored, as_json)


@click.command("discover")
@click.option("--tenant", required=True, help="The caller's tenant.")
@click.option("--scope", "scopes", multiple=True, help="A scope the caller holds (repeatable).")
@click.option("--clearance", required=True,
              help="public, internal, confidential or restricted.")
@click.option("--include-deprecated", is_flag=True, help="Offer deprecated versions too.")
@_options
def discover_cmd(tenant: str, scopes: tuple[str, ...], clearance: str, include_deprecated: bool,
                 registry_url: str | None, as_json: bool) -> None:
    """The newest version of each tool this caller may see, by name."""
    try:
        principal = Principal.parse(tenant, scopes, clearance)
    except ToolkeeperError as exc:
        _report(exc, as_json)
    with _registry(registry_url, as_json, read_only=True) as registry:
        _emit_records(registry.discover(principal, include_deprecated=include_deprecated),
                      as_json)


@click.command("audit")
@_options
def audit_cmd(registry_url: str | None, as_json: bool) -> None:
    """The append-only audit trail, oldest first (refused publishes included)."""
    with _registry(registry_url, as_json, read_only=True) as registry:
        entries = registry.audit()
        if as_json:
            echo_json([e.to_dict() for e in entries])
            return
        for e in entries:
            outcome = f"refused [{e.rule}]" if e.rule else "applied"
            click.echo(f"{e.seq} {e.at} {e.actor} {e.action} {e.name} {e.version} {outcome}")


_COMMANDS = (publish_cmd, show_cmd, versions_cmd, deprecate_cmd, retire_cmd, discover_cmd, audit_cmd)


def register(group: click.Group) -> None:
    """Add the registry commands to ``group``."""
    for command in _COMMANDS:
        group.add_command(command)
