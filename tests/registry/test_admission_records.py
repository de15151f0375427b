"""Admission records on every backend: a publish that stores a version keeps the guard's
decision (classification, rule ids, the version judged against, the contract digest) with a
stable digest of its canonical JSON, in the publish's own transaction; a refused publish and an
identical re-publish keep nothing new; the SQL tables are append-only; a version published
before the stores kept them has none."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from registry_kit import Backend, evolved, make_spec

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import PublishRefusedError
from toolkeeper.registry import Registry
from toolkeeper.registry import sqlite as sqlite_module
from toolkeeper.registry.admission import AdmissionRecord
from toolkeeper.registry.migrations import SQLITE_MIGRATIONS

NAME = "payments.lookup"


def _record(registry: Registry, version: str) -> AdmissionRecord:
    record = registry.admission(NAME, version)
    assert record is not None
    return record


def test_a_first_publish_records_an_initial_admission_with_its_canonical_digest(
        backend: Backend) -> None:
    registry = backend.open()
    stored = registry.publish(evolved(NAME, "1.0.0"), actor="ops")
    record = _record(registry, "1.0.0")
    assert record.to_dict() == {
        "tool": NAME, "version": "1.0.0", "classification": "initial", "changeRules": [],
        "guardRules": ["publish.immutable"], "previous": None,
        "contractDigest": stored.content_digest}
    assert record.digest == hashlib.sha256(canonical_json(record.to_dict())).hexdigest()
    assert backend.open().admission(NAME, "1.0.0") == record  # another replica reads it


def test_a_major_publish_records_its_classification_rules_and_previous_version(
        backend: Backend) -> None:
    registry = backend.open()
    registry.publish(evolved(NAME, "1.0.0"))
    stored = registry.publish(evolved(NAME, "2.0.0"))
    record = _record(registry, "2.0.0")
    assert (record.classification, record.previous) == ("major", "1.0.0")
    assert record.change_rules == ("input.property.added", "input.required.added")
    assert record.guard_rules == ("publish.bump_required", "publish.immutable",
                                  "publish.not_monotonic")
    assert record.contract_digest == stored.content_digest


def test_the_same_decision_has_the_same_digest_on_every_backend(backend: Backend) -> None:
    registry = backend.open()
    registry.publish(evolved(NAME, "1.0.0"), actor="someone")
    registry.publish(evolved(NAME, "1.1.0"), actor="someone else")
    twin = Registry.open("memory:")
    twin.publish(evolved(NAME, "1.0.0"))
    twin.publish(evolved(NAME, "1.1.0"))
    assert _record(registry, "1.1.0").digest == _record(twin, "1.1.0").digest


def test_publish_all_records_every_version_it_stores(backend: Backend) -> None:
    registry = backend.open()
    registry.publish_all([evolved(NAME, "1.0.0"), evolved(NAME, "1.1.0"),
                          make_spec("other.tool", "0.1.0")])
    assert _record(registry, "1.1.0").previous == "1.0.0"
    assert _record(registry, "1.1.0").classification == "minor"
    assert registry.admission("other.tool", "0.1.0") is not None


def test_a_refused_publish_records_nothing(backend: Backend) -> None:
    registry = backend.open()
    registry.publish(evolved(NAME, "1.0.0"))
    with pytest.raises(PublishRefusedError):
        registry.publish(evolved(NAME, "1.1.0", shape="2.0.0"))  # a MAJOR change as a minor
    assert registry.admission(NAME, "1.1.0") is None
    with pytest.raises(PublishRefusedError):  # the batch is refused whole: nothing of it kept
        registry.publish_all([evolved(NAME, "1.2.0"), evolved(NAME, "1.3.0", shape="2.0.0")])
    assert registry.admission(NAME, "1.2.0") is None
    assert backend.open().admission(NAME, "1.2.0") is None


def test_an_identical_republish_keeps_the_first_record(backend: Backend) -> None:
    registry = backend.open()
    registry.publish(evolved(NAME, "1.0.0"))
    first = _record(registry, "1.0.0")
    assert not registry.publish_outcome(evolved(NAME, "1.0.0")).created
    assert _record(registry, "1.0.0") == first


def test_an_unknown_version_has_no_record(backend: Backend) -> None:
    registry = backend.open()
    registry.publish(evolved(NAME, "1.0.0"))
    assert registry.admission(NAME, "9.0.0") is None
    assert registry.admission("no.such.tool", "1.0.0") is None


def test_admission_records_are_append_only_in_the_sql_stores(sql_backend: Backend) -> None:
    registry = sql_backend.open()
    registry.publish(evolved(NAME, "1.0.0"))
    if sql_backend.kind == "sqlite":
        conn = sqlite3.connect(sql_backend.url.removeprefix("sqlite://"))
        try:
            for statement in ("UPDATE admissions SET digest = 'x'", "DELETE FROM admissions"):
                with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                    conn.execute(statement)
        finally:
            conn.close()
    else:
        import psycopg

        with psycopg.connect(sql_backend.url, autocommit=True) as pg:
            for statement in ("UPDATE admissions SET digest = 'x'", "DELETE FROM admissions"):
                with pytest.raises(psycopg.errors.IntegrityConstraintViolation):
                    pg.execute(statement)
    assert _record(registry, "1.0.0").version == "1.0.0"


def test_a_version_published_before_the_migration_has_no_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "registry.db"
    before = tuple(m for m in SQLITE_MIGRATIONS if m.version < 8)
    with monkeypatch.context() as patched:  # the registry as a toolkeeper before records left it
        patched.setattr(sqlite_module, "SQLITE_MIGRATIONS", before)
        Registry.open(f"sqlite://{path}").close()
    _publish_without_admissions(path)
    with Registry.open(f"sqlite://{path}") as migrated:  # migration 8 runs now
        assert migrated.get(NAME, "1.0.0") is not None
        assert migrated.admission(NAME, "1.0.0") is None  # none is made up for it
        migrated.publish(evolved(NAME, "1.1.0"))
        assert _record(migrated, "1.1.0").previous == "1.0.0"


def _publish_without_admissions(path: Path) -> None:
    """A publish as a toolkeeper before admission records wrote it: contract and audit rows."""
    from toolkeeper.registry.rows import audit_params, contract_params
    from toolkeeper.registry.store import AuditRecord, utc_now

    spec = evolved(NAME, "1.0.0")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO contracts (name, version_key, version, content_digest, status,"
                     " document) VALUES (:name, :version_key, :version, :content_digest,"
                     " :status, :document)", contract_params(spec))
        conn.execute("INSERT INTO audit (at, actor, action, name, version, rule, verdict)"
                     " VALUES (:at, :actor, :action, :name, :version, :rule, :verdict)",
                     audit_params(AuditRecord(utc_now(), "old", "publish", NAME, "1.0.0")))
