"""Versioned schema migrations for the SQL stores (SPEC 2.4).

Each backend has an ordered tuple of :class:`Migration`; a store applies, in one transaction
each, every migration above the highest version recorded in ``schema_version``, and refuses to
open a database migrated by a newer toolkeeper. Adding a migration is appending a row; a
migration already released is never edited.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["POSTGRES_MIGRATIONS", "SQLITE_MIGRATIONS", "Migration", "latest_version"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


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
)


def latest_version(migrations: tuple[Migration, ...]) -> int:
    """The schema version a fully migrated database has."""
    return migrations[-1].version if migrations else 0
