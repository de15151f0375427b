"""Versioned schema migrations for the SQL stores (SPEC 2.4), and how a store recognises a
database as toolkeeper's before it touches it.

Each backend has an ordered tuple of :class:`Migration`; a store applies, in one transaction
each, every migration above the highest version recorded in ``schema_version``, and refuses to
open a database migrated by a newer toolkeeper. Adding a migration is appending a row; a
migration already released is never edited.

A database is toolkeeper's when its ``schema_version`` rows up to the latest version this
toolkeeper knows are exactly its migrations (version and description, numbered from 1) and the
tables those migrations create are there; a database with no tables at all is new. Anything
else belongs to something else and is refused (``registry.foreign``), never migrated: a
migration into another program's database would mix our tables into its schema, or fail
half-way on a table of the same name.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from toolkeeper.errors import StoreError

__all__ = [
    "POSTGRES_MIGRATIONS",
    "SCHEMA_TABLE",
    "SQLITE_MIGRATIONS",
    "Migration",
    "check_usable",
    "latest_version",
    "recognise_schema",
]

SCHEMA_TABLE = "schema_version"
"""The table recording the migrations applied (``version``, ``description``, ``applied_at``)."""

_CREATES_TABLE = re.compile(r"\s*CREATE TABLE (\w+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]

    @property
    def tables(self) -> frozenset[str]:
        """The tables this migration creates (read from its statements)."""
        return frozenset(found.group(1) for statement in self.statements
                         if (found := _CREATES_TABLE.match(statement)))


_API_KEYS: tuple[str, ...] = (
    """CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        salt TEXT NOT NULL,
        hash TEXT NOT NULL,
        tenant TEXT NOT NULL,
        scopes TEXT NOT NULL,
        clearance TEXT NOT NULL,
        name TEXT,
        created TEXT NOT NULL,
        expires TEXT,
        revoked_at TEXT)""",
    "CREATE INDEX api_keys_revoked ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL",
)
"""Migration 2's table and index, the same on both backends (their triggers differ)."""

_CALLS_INDEXES: tuple[str, ...] = (
    "CREATE INDEX calls_at_min ON calls (at_min)",
    "CREATE INDEX calls_at_max ON calls (at_max)",
)
"""Migration 3's indexes, the same on both backends (the table's column types differ)."""

_SPENT_STATES: tuple[str, ...] = (
    """CREATE TABLE spent_states (
        digest TEXT PRIMARY KEY,
        expires_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX spent_states_expiry ON spent_states (expires_at)",
)
"""Migration 4's table and index, the same on both backends
(:mod:`toolkeeper.registry.spent_states`)."""

_REFUSALS_INDEXES: tuple[str, ...] = (
    "CREATE INDEX refusals_at_min ON refusals (at_min)",
    "CREATE INDEX refusals_at_max ON refusals (at_max)",
)
"""Migration 5's indexes: the refusal log, the call log's segments in a table of its own
(:mod:`toolkeeper.registry.refusal_query`)."""

_UPSTREAMS: tuple[str, ...] = (
    """CREATE TABLE upstreams (
        name TEXT PRIMARY KEY,
        definition TEXT NOT NULL,
        origin TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL)""",
    """CREATE TABLE upstream_tools (
        upstream TEXT NOT NULL,
        tool TEXT NOT NULL,
        exposed TEXT NOT NULL,
        version TEXT NOT NULL,
        digest TEXT NOT NULL,
        descriptor TEXT NOT NULL,
        present INTEGER NOT NULL,
        last_seen_digest TEXT,
        versions TEXT NOT NULL,
        PRIMARY KEY (upstream, tool))""",
    """CREATE TABLE upstream_drifts (
        id TEXT PRIMARY KEY,
        upstream TEXT NOT NULL,
        tool TEXT NOT NULL,
        seen_at TEXT NOT NULL,
        previous_digest TEXT NOT NULL,
        new_digest TEXT NOT NULL,
        previous_descriptor TEXT NOT NULL,
        new_descriptor TEXT NOT NULL,
        level TEXT NOT NULL,
        classes TEXT NOT NULL,
        changes TEXT NOT NULL,
        status TEXT NOT NULL,
        decided_by TEXT,
        decided_at TEXT,
        published_version TEXT)""",
    "CREATE INDEX upstream_drifts_tool ON upstream_drifts (upstream, tool, seen_at)",
)
"""Migration 6's tables, the same on both backends (:mod:`toolkeeper.registry.upstream_records`)."""

_UPSTREAM_HEALTH: tuple[str, ...] = (
    """CREATE TABLE upstream_health (
        upstream TEXT NOT NULL,
        replica TEXT NOT NULL,
        status TEXT NOT NULL,
        updated TEXT NOT NULL,
        PRIMARY KEY (upstream, replica))""",
)
"""Migration 7's table, the same on both backends: each serving gateway's last view of each
upstream's health (:mod:`toolkeeper.registry.upstream_records`)."""

_ADMISSIONS: tuple[str, ...] = (
    """CREATE TABLE admissions (
        name TEXT NOT NULL,
        version_key TEXT NOT NULL,
        version TEXT NOT NULL,
        digest TEXT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (name, version_key))""",
)
"""Migration 8's table, the same on both backends (their append-only triggers differ): the
publish guard's admission record of each version published since
(:mod:`toolkeeper.registry.admission`)."""


def _rollouts(bigint: str, serial: str) -> tuple[str, ...]:
    """Migration 9's tables (:mod:`toolkeeper.registry.rollout_rows`): one row per rollout,
    keyed by tool and start time, at most one of a tool not over (the partial unique index),
    and its decisions, append-only (each backend adds its triggers)."""
    return (
        f"""CREATE TABLE rollouts (
            tool TEXT NOT NULL,
            started_us {bigint} NOT NULL,
            candidate TEXT NOT NULL,
            target TEXT NOT NULL,
            steps TEXT NOT NULL,
            step INTEGER NOT NULL,
            state TEXT NOT NULL,
            salt TEXT NOT NULL,
            policy TEXT NOT NULL,
            interval_s INTEGER NOT NULL,
            max_holds INTEGER NOT NULL,
            holds INTEGER NOT NULL,
            rollback_evidence TEXT NOT NULL,
            step_started_us {bigint} NOT NULL,
            updated_us {bigint} NOT NULL,
            seq INTEGER NOT NULL,
            actor TEXT NOT NULL,
            extra TEXT NOT NULL,
            PRIMARY KEY (tool, started_us))""",
        "CREATE UNIQUE INDEX rollouts_open ON rollouts (tool)"
        " WHERE state IN ('running', 'paused', 'halted')",
        f"""CREATE TABLE rollout_decisions (
            id {serial} PRIMARY KEY,
            tool TEXT NOT NULL,
            started_us {bigint} NOT NULL,
            seq INTEGER NOT NULL,
            at_us {bigint} NOT NULL,
            step INTEGER NOT NULL,
            share INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            state_after TEXT NOT NULL,
            envelope TEXT NOT NULL,
            reasons TEXT NOT NULL)""",
        "CREATE INDEX rollout_decisions_rollout ON rollout_decisions (tool, started_us, id)",
    )

_ROLLOUT_STEPS: tuple[str, ...] = (
    "ALTER TABLE calls ADD COLUMN layout INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE refusals ADD COLUMN layout INTEGER NOT NULL DEFAULT 0",
)
"""Migration 10, the same on both backends: the layout of a call-log or refusal-log segment's
rows (:mod:`toolkeeper.registry.call_segments`): 0 for those written before it, 1 for those
that end with the rollout step that served the call. A toolkeeper from before it refuses the
database (``registry.schema_too_new``) rather than misread the longer rows."""

SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "contracts, append-only audit trail", (
        """CREATE TABLE contracts (
            name TEXT NOT NULL,
            version_key TEXT NOT NULL,
            version TEXT NOT NULL,
            content_digest TEXT NOT NULL,
            status TEXT NOT NULL,
            document TEXT NOT NULL,
            CONSTRAINT contracts_name_version UNIQUE (name, version_key))""",
        """CREATE TABLE audit (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            name TEXT NOT NULL,
            version TEXT NOT NULL,
            rule TEXT,
            verdict TEXT)""",
        """CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
            BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END""",
        """CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
            BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END""",
        """CREATE TRIGGER contracts_kept BEFORE DELETE ON contracts
            BEGIN SELECT RAISE(ABORT, 'published contracts are kept forever'); END""",
        """CREATE TRIGGER contracts_content_immutable BEFORE UPDATE ON contracts
            WHEN NEW.content_digest IS NOT OLD.content_digest OR NEW.name IS NOT OLD.name
              OR NEW.version_key IS NOT OLD.version_key
            BEGIN SELECT RAISE(ABORT, 'published contract content is immutable'); END""",
    )),
    Migration(2, "api keys: salted hashes, revocation", (
        *_API_KEYS,
        """CREATE TRIGGER api_keys_kept BEFORE DELETE ON api_keys
            BEGIN SELECT RAISE(ABORT, 'api keys are revoked, never deleted'); END""",
        """CREATE TRIGGER api_keys_revocation_only BEFORE UPDATE ON api_keys
            WHEN OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
              OR NEW.id IS NOT OLD.id OR NEW.salt IS NOT OLD.salt OR NEW.hash IS NOT OLD.hash
              OR NEW.tenant IS NOT OLD.tenant OR NEW.scopes IS NOT OLD.scopes
              OR NEW.clearance IS NOT OLD.clearance OR NEW.name IS NOT OLD.name
              OR NEW.created IS NOT OLD.created OR NEW.expires IS NOT OLD.expires
            BEGIN SELECT RAISE(ABORT, 'an api key changes only by being revoked, once'); END""",
    )),
    Migration(3, "call log", (
        """CREATE TABLE calls (
            seq INTEGER PRIMARY KEY,
            call_count INTEGER NOT NULL,
            at_min INTEGER NOT NULL,
            at_max INTEGER NOT NULL,
            body BLOB NOT NULL)""",
        *_CALLS_INDEXES,
    )),
    Migration(4, "spent request states", _SPENT_STATES),
    Migration(5, "refusal log", (
        """CREATE TABLE refusals (
            seq INTEGER PRIMARY KEY,
            call_count INTEGER NOT NULL,
            at_min INTEGER NOT NULL,
            at_max INTEGER NOT NULL,
            body BLOB NOT NULL)""",
        *_REFUSALS_INDEXES,
    )),
    Migration(6, "upstream servers, their tools and drifts", _UPSTREAMS),
    Migration(7, "upstream health as each serving gateway saw it", _UPSTREAM_HEALTH),
    Migration(8, "admission records of publishes", (
        *_ADMISSIONS,
        """CREATE TRIGGER admissions_no_update BEFORE UPDATE ON admissions
            BEGIN SELECT RAISE(ABORT, 'admission records are append-only'); END""",
        """CREATE TRIGGER admissions_no_delete BEFORE DELETE ON admissions
            BEGIN SELECT RAISE(ABORT, 'admission records are append-only'); END""",
    )),
    Migration(9, "progressive rollouts and their decisions", (
        *_rollouts("INTEGER", "INTEGER"),
        """CREATE TRIGGER rollouts_kept BEFORE DELETE ON rollouts
            BEGIN SELECT RAISE(ABORT, 'rollouts are kept forever'); END""",
        """CREATE TRIGGER rollout_decisions_no_update BEFORE UPDATE ON rollout_decisions
            BEGIN SELECT RAISE(ABORT, 'rollout decisions are append-only'); END""",
        """CREATE TRIGGER rollout_decisions_no_delete BEFORE DELETE ON rollout_decisions
            BEGIN SELECT RAISE(ABORT, 'rollout decisions are append-only'); END""",
    )),
    Migration(10, "the rollout step of each logged call and refusal", _ROLLOUT_STEPS),
)

POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "contracts, append-only audit trail", (
        """CREATE TABLE contracts (
            name TEXT NOT NULL,
            version_key TEXT NOT NULL,
            version TEXT NOT NULL,
            content_digest TEXT NOT NULL,
            status TEXT NOT NULL,
            document TEXT NOT NULL,
            CONSTRAINT contracts_name_version UNIQUE (name, version_key))""",
        """CREATE TABLE audit (
            seq BIGSERIAL PRIMARY KEY,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            name TEXT NOT NULL,
            version TEXT NOT NULL,
            rule TEXT,
            verdict TEXT)""",
        """CREATE FUNCTION toolkeeper_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
            END $$""",
        """CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit FOR EACH ROW
            EXECUTE FUNCTION toolkeeper_refuse('the audit trail is append-only')""",
        """CREATE TRIGGER contracts_kept BEFORE DELETE ON contracts FOR EACH ROW
            EXECUTE FUNCTION toolkeeper_refuse('published contracts are kept forever')""",
        """CREATE TRIGGER contracts_content_immutable BEFORE UPDATE ON contracts FOR EACH ROW
            WHEN (NEW.content_digest IS DISTINCT FROM OLD.content_digest
                  OR NEW.name IS DISTINCT FROM OLD.name
                  OR NEW.version_key IS DISTINCT FROM OLD.version_key)
            EXECUTE FUNCTION toolkeeper_refuse('published contract content is immutable')""",
    )),
    Migration(2, "api keys: salted hashes, revocation", (
        *_API_KEYS,
        """CREATE TRIGGER api_keys_kept BEFORE DELETE ON api_keys FOR EACH ROW
            EXECUTE FUNCTION toolkeeper_refuse('api keys are revoked, never deleted')""",
        """CREATE TRIGGER api_keys_revocation_only BEFORE UPDATE ON api_keys FOR EACH ROW
            WHEN (OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
                  OR (NEW.id, NEW.salt, NEW.hash, NEW.tenant, NEW.scopes, NEW.clearance,
                      NEW.name, NEW.created, NEW.expires)
                     IS DISTINCT FROM (OLD.id, OLD.salt, OLD.hash, OLD.tenant, OLD.scopes,
                                       OLD.clearance, OLD.name, OLD.created, OLD.expires))
            EXECUTE FUNCTION toolkeeper_refuse('an api key changes only by being revoked, once')""",
    )),
    Migration(3, "call log", (
        """CREATE TABLE calls (
            seq BIGINT PRIMARY KEY,
            call_count INTEGER NOT NULL,
            at_min BIGINT NOT NULL,
            at_max BIGINT NOT NULL,
            body BYTEA NOT NULL)""",
        *_CALLS_INDEXES,
    )),
    Migration(4, "spent request states", _SPENT_STATES),
    Migration(5, "refusal log", (
        """CREATE TABLE refusals (
            seq BIGINT PRIMARY KEY,
            call_count INTEGER NOT NULL,
            at_min BIGINT NOT NULL,
            at_max BIGINT NOT NULL,
            body BYTEA NOT NULL)""",
        *_REFUSALS_INDEXES,
    )),
    Migration(6, "upstream servers, their tools and drifts", _UPSTREAMS),
    Migration(7, "upstream health as each serving gateway saw it", _UPSTREAM_HEALTH),
    Migration(8, "admission records of publishes", (
        *_ADMISSIONS,
        """CREATE TRIGGER admissions_append_only BEFORE UPDATE OR DELETE ON admissions
            FOR EACH ROW EXECUTE FUNCTION toolkeeper_refuse('admission records are append-only')""",
    )),
    Migration(9, "progressive rollouts and their decisions", (
        *_rollouts("BIGINT", "BIGSERIAL"),
        """CREATE TRIGGER rollouts_kept BEFORE DELETE ON rollouts FOR EACH ROW
            EXECUTE FUNCTION toolkeeper_refuse('rollouts are kept forever')""",
        """CREATE TRIGGER rollout_decisions_append_only BEFORE UPDATE OR DELETE
            ON rollout_decisions FOR EACH ROW
            EXECUTE FUNCTION toolkeeper_refuse('rollout decisions are append-only')""",
    )),
    Migration(10, "the rollout step of each logged call and refusal", _ROLLOUT_STEPS),
)


def latest_version(migrations: tuple[Migration, ...]) -> int:
    """The schema version a fully migrated database has."""
    return migrations[-1].version if migrations else 0


def _foreign(where: str, tables: Collection[str], why: str) -> StoreError:
    return StoreError(f"{where} is not a toolkeeper registry ({why}); refusing to touch it",
                      code="registry.foreign", data={"tables": sorted(tables)})


def recognise_schema(where: str, tables: Collection[str],
                     recorded: Sequence[tuple[int, str]] | None,
                     migrations: tuple[Migration, ...]) -> int:
    """The toolkeeper schema version of the database ``where`` names, from the names of its
    tables and the (version, description) rows of its ``schema_version`` table (``None``: there
    is none with those columns): 0 for a database without tables. A database that is not
    toolkeeper's is ``registry.foreign``; one from a newer toolkeeper
    ``registry.schema_too_new``."""
    if not recorded:  # no rows (a new database: nothing else there) or not our table at all
        if not tables or (recorded is not None and set(tables) == {SCHEMA_TABLE}):
            return 0
        raise _foreign(where, tables, f"it has tables but no {SCHEMA_TABLE} of toolkeeper's")
    latest = latest_version(migrations)
    known = [row for row in recorded if row[0] <= latest]
    if known != [(m.version, m.description) for m in migrations[:len(known)]]:
        raise _foreign(where, tables, f"its {SCHEMA_TABLE} records other migrations")
    missing = set().union(*(m.tables for m in migrations[:len(known)])) - set(tables)
    if missing:
        raise _foreign(where, tables, f"tables {', '.join(sorted(missing))} are missing")
    current = max(row[0] for row in recorded)
    if current > latest:
        raise StoreError(f"{where} has schema version {current}, newer than this toolkeeper "
                         "understands", code="registry.schema_too_new",
                         data={"version": current, "latest": latest})
    return current


def check_usable(where: str, version: int, migrations: tuple[Migration, ...], *,
                 create: bool, read_only: bool) -> None:
    """Refuse a database at schema ``version`` for this use: a new (empty) one unless the
    caller may ``create`` a registry (``registry.missing``), one that needs migrating when the
    caller only reads (``registry.schema_outdated``: a reader never migrates)."""
    if version == 0 and (read_only or not create):
        raise StoreError(f"no registry at {where} (the database is empty)",
                         code="registry.missing", data={"where": where})
    if read_only and version < latest_version(migrations):
        raise StoreError(f"{where} has schema version {version}; a write with this toolkeeper "
                         "migrates it", code="registry.schema_outdated",
                         data={"version": version, "latest": latest_version(migrations)})
