"""API key commands: ``toolkeeper keys add|list|revoke`` (issue 13).

Keys live in the registry store (``--registry URL`` / ``TOOLKEEPER_REGISTRY``, as for the
registry commands), so every gateway replica on that registry sees them. ``add`` prints the new
key once (it is not kept: only its salted hash is); ``list`` never shows a key or a hash and
opens the store read-only; ``revoke`` marks a key revoked, and every gateway refuses it within a
second. Exit codes: 0 done, 1 no such key, 2 bad input (bad clearance, tenant, scope or expiry,
unusable registry).

Every ``keys`` command refuses a registry that is not there (``registry.missing``, nothing
created: a mistyped path or database never becomes a new, empty key store), except ``keys add
--create``, which makes it; and every one refuses ``memory:`` (``registry.memory_refused``): a
key kept in this process's memory is gone when the command exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from toolkeeper.auth.keys import issue_key, parse_expiry, revoke_key
from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.usage import ToolkeeperGroup
from toolkeeper.errors import NotFoundError, ToolkeeperError
from toolkeeper.registry import RegistryStore, open_store
from toolkeeper.registry.apikeys import ApiKeyRecord, KeyStore, key_store
from toolkeeper.registry.location import ENV_VAR, default_url

__all__ = ["register"]

F = TypeVar("F", bound=Callable[..., Any])


def _options(func: F) -> F:
    func = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(func)
    return click.option("--registry", "registry_url", envvar=ENV_VAR, default=None,
                        metavar="URL", help="sqlite:///path.db or postgresql://... (memory: is refused; "
                        f"env {ENV_VAR}; default: a SQLite file in the user data dir).")(func)


def _fail(error: ToolkeeperError, as_json: bool) -> None:
    fail(error, as_json=as_json,
         code=EXIT_REFUSED if isinstance(error, NotFoundError) else EXIT_BAD_INPUT)


def _refuse_memory(url: str | None) -> None:
    scheme, sep, _ = (url or "").strip().partition(":")
    if sep and scheme.lower() == "memory":
        raise ToolkeeperError("keys need a registry that outlives the command: memory: keeps "
                              "nothing (use sqlite:///path.db or postgresql://...)",
                              code="registry.memory_refused", data={"scheme": "memory"})


def _open(url: str | None, *, create: bool, read_only: bool) -> RegistryStore:
    _refuse_memory(url if url is not None else default_url())
    try:
        return open_store(url, create=create, read_only=read_only)
    except ToolkeeperError as exc:
        if exc.code != "registry.missing" or read_only:
            raise
        raise ToolkeeperError(f"{exc.message} (keys add --create makes one)", code=exc.code,
                              path=exc.path, data=exc.data) from None


@contextmanager
def _keys(url: str | None, as_json: bool, *, create: bool = False, read_only: bool = False
          ) -> Iterator[KeyStore]:
    """The key store at ``url``; every ToolkeeperError inside is reported with its exit code."""
    try:
        store = _open(url, create=create, read_only=read_only)
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    try:
        yield key_store(store)
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    finally:
        store.close()


def _line(record: ApiKeyRecord) -> str:
    scopes = ",".join(record.scopes) or "-"
    state = (f"revoked {record.revoked_at}" if record.revoked_at
             else f"expires {record.expires}" if record.expires else "active")
    name = f" {record.name!r}" if record.name else ""
    return f"{record.id} tenant={record.tenant} scopes={scopes} clearance={record.clearance}" \
           f" [{state}]{name}"


@click.group("keys", cls=ToolkeeperGroup)
def keys_group() -> None:
    """API keys for the gateway (kept in the registry store as salted hashes)."""


@keys_group.command("add")
@click.option("--tenant", required=True, help="The tenant the key speaks for.")
@click.option("--scope", "scopes", multiple=True, help="A scope the key holds (repeatable).")
@click.option("--clearance", required=True, help="public, internal, confidential or restricted.")
@click.option("--name", default=None, help="A label for people (shown by keys list).")
@click.option("--expires", default=None, metavar="WHEN",
              help="ISO-8601 time (UTC unless an offset is given) or a duration: 30d, 12h, P90D.")
@click.option("--create", is_flag=True,
              help="Make the registry when it does not exist (else registry.missing).")
@_options
def add_cmd(tenant: str, scopes: tuple[str, ...], clearance: str, name: str | None,
            expires: str | None, create: bool, registry_url: str | None, as_json: bool
            ) -> None:
    """Create a key and print it once (only its salted hash is kept)."""
    try:
        expiry = parse_expiry(expires) if expires is not None else None
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    with _keys(registry_url, as_json, create=create) as store:
        issued = issue_key(store, tenant=tenant, scopes=scopes, clearance=clearance, name=name,
                           expires=expiry)
    record = issued.record
    if as_json:
        echo_json({"id": record.id, "key": issued.token, "tenant": record.tenant,
                   "scopes": list(record.scopes), "clearance": record.clearance})
        return
    click.echo(issued.token)
    click.echo(f"created {_line(record)} (the key is shown only now)", err=True)


@keys_group.command("list")
@_options
def list_cmd(registry_url: str | None, as_json: bool) -> None:
    """Every key, oldest first: id, principal, dates; never the key or its hash."""
    with _keys(registry_url, as_json, read_only=True) as store:
        records = store.list_keys()
    if as_json:
        echo_json([r.to_public_dict() for r in records])
        return
    for record in records:
        click.echo(_line(record))


@keys_group.command("revoke")
@click.argument("key_id", metavar="ID")
@_options
def revoke_cmd(key_id: str, registry_url: str | None, as_json: bool) -> None:
    """Revoke key ID: every gateway on this registry refuses it within a second."""
    with _keys(registry_url, as_json) as store:
        record = revoke_key(store, key_id)
    if as_json:
        echo_json(record.to_public_dict())
    else:
        click.echo(f"revoked {record.id} at {record.revoked_at}")


def register(group: click.Group) -> None:
    """Add the ``keys`` group to ``group``."""
    group.add_command(keys_group)
