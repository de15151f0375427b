"""Every CLI command against a corpus of bad input: documents it reads and stores it opens.

The invariant, per case and command: no Python traceback; exit 2 with a stable code for bad
input (a document that cannot be read as JSON data, a registry URL or store that cannot be
used as a toolkeeper registry), exit 1 for a refusal by a working registry; a read-only command
(``versions``, ``discover``, ``audit``) leaves every file of the store byte-identical, and so
does every command facing a store that is not a usable toolkeeper registry (it is never
migrated). ``serve`` runs as a real process (``--stdio`` on an empty input: it stops at once
when it gets that far); the other commands run in process.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry

CAP = 4 * 1024 * 1024  # the documented size cap of a document file (4 MiB)
NAME = "payments.lookup"


def _contract(version: str = "1.0.0", description: str = "Returns a payment.") -> dict[str, Any]:
    return {"name": NAME, "version": version, "title": "Look up a payment",
            "description": description, "dataClassification": "internal",
            "sideEffect": "read",
            "inputSchema": {"type": "object", "properties": {"reference": {"type": "string"}}}}


def _yaml_contract(schema: str, title: str = "T") -> bytes:
    return (f"name: fuzz.tool\nversion: 1.0.0\ntitle: {title}\ndescription: D\n"
            f"dataClassification: public\nsideEffect: read\ninputSchema: {schema}\n").encode()


@dataclass(frozen=True)
class Outcome:
    code: int
    error: str | None  # the error's stable code (a refusal's rule), None on success
    stdout: str
    stderr: str


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment every run gets: no registry from the caller's environment, and a user
    data directory of our own (a command that fell back to the default store writes there)."""
    env = {k: v for k, v in os.environ.items() if k != "TOOLKEEPER_REGISTRY"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    return env


def _error_code(line: str) -> str | None:
    if not line:
        return None
    error = json.loads(line).get("error") if line.startswith("{") else None
    if not isinstance(error, dict):
        return None
    return str(error.get("code") or error.get("rule"))


def run(tmp_path: Path, args: list[str], env: Mapping[str, str] | None = None) -> Outcome:
    """One command; in process (with ``--json``), or ``serve`` as a real process."""
    full_env = {**_clean_env(tmp_path), **(env or {})}
    if args[0] == "serve":
        done = subprocess.run([sys.executable, "-m", "toolkeeper", *args, "--stdio"],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                              env=full_env, check=False)
        stderr = done.stderr.decode(errors="replace")
        found = re.search(r"^error: .*\[([\w.]+)\]$", stderr, re.MULTILINE)
        return Outcome(done.returncode, found.group(1) if found else None,
                       done.stdout.decode(errors="replace"), stderr)
    runner_env: dict[str, str | None] = {**full_env}
    runner_env.setdefault("TOOLKEEPER_REGISTRY", None)  # unset unless the case sets it
    result = CliRunner().invoke(cli, [*args, "--json"], env=runner_env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback: {result.exception!r}") from result.exception
    lines = result.stdout.splitlines()
    return Outcome(result.exit_code, _error_code(lines[-1] if lines else ""), result.stdout,
                   result.stderr)


def assert_outcome(outcome: Outcome, code: int, error: str | None) -> None:
    assert "Traceback" not in outcome.stdout + outcome.stderr, outcome.stderr
    assert (outcome.code, outcome.error) == (code, error), outcome.stdout + outcome.stderr


# --- documents: every file argument of every command --------------------------------------


@dataclass(frozen=True)
class Doc:
    suffix: str
    content: bytes | None  # None: the ``special`` path below
    error: str
    special: str | None = None  # "/dev/zero", "directory", "missing"
    offset: int | None = None  # data.offset of the first byte that is not UTF-8


DOCUMENTS: dict[str, Doc] = {
    "YAML that is not UTF-8": Doc(".yaml", b"name: caf\xe9\n", "file.not_utf8", offset=9),
    "JSON that is not UTF-8": Doc(".json", b'{"name": "caf\xc3("}', "file.not_utf8", offset=13),
    "YAML in UTF-16": Doc(".yaml", "name: x\n".encode("utf-16"), "file.not_utf8", offset=0),
    "YAML holding a NUL byte": Doc(".yaml", b"name: x\x00\n", "yaml.invalid"),
    "an endless device": Doc(".json", None, "file.too_large", special="/dev/zero"),
    "a file one byte over the cap": Doc(".json", b"{}" + b" " * (CAP - 1), "file.too_large"),
    "a directory": Doc(".json", None, "file.unreadable", special="directory"),
    "a missing file": Doc(".json", None, "file.unreadable", special="missing"),
    "a YAML date": Doc(".yaml", b"a: 2020-01-01\n", "json.not_json"),
    "YAML binary": Doc(".yaml", b"a: !!binary aGVsbG8=\n", "json.not_json"),
    "a YAML set": Doc(".yaml", b"a: !!set {x, y}\n", "json.not_json"),
    "a YAML integer key": Doc(".yaml", b"1: x\n", "json.key_not_string"),
    "a YAML recursive alias": Doc(".yaml", b"&a [*a]\n", "yaml.recursive_alias"),
    "YAML infinity": Doc(".yaml", b"a: .inf\n", "json.not_finite"),
    "JSON nested 301 deep": Doc(".json", b'{"a":' * 301 + b"1" + b"}" * 301, "json.too_deep"),
    "an integer key in a contract's schema": Doc(".yaml", _yaml_contract(
        "{type: object, properties: {1: {type: integer}}}"), "json.key_not_string"),
    "a recursive alias in a contract's schema": Doc(".yaml", _yaml_contract(
        "&s {type: object, properties: {a: *s}}"), "yaml.recursive_alias"),
    "a lone surrogate in a pattern": Doc(".yaml", _yaml_contract(
        '{type: object, properties: {a: {pattern: "\\ud800"}}}'), "json.lone_surrogate"),
    "a lone surrogate in the title": Doc(".yaml", _yaml_contract(
        "{type: object}", title='"\\ud800"'), "json.lone_surrogate"),
    "a NaN in a contract's schema": Doc(".yaml", _yaml_contract(
        "{type: object, properties: {a: {const: .nan}}}"), "json.not_finite"),
    "a contract's schema nested 300 deep": Doc(".yaml", _yaml_contract(
        '{"type":"object","properties":{"a":' * 300 + '{"type":"integer"}' + "}}" * 300),
        "json.too_deep"),
}


def _place(tmp_path: Path, doc: Doc, folder: str = "docs") -> Path:
    directory = tmp_path / folder
    directory.mkdir(exist_ok=True)
    if doc.special == "/dev/zero":
        return Path("/dev/zero")
    path = directory / f"document{doc.suffix}"
    if doc.special == "directory":
        path.mkdir()
    elif doc.content is not None:
        path.write_bytes(doc.content)
    return path


def _good(tmp_path: Path) -> str:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(_contract()))
    return str(path)


# Where a document goes in each command: the argument list around it.
SLOTS: dict[str, Callable[[Path, str], list[str]]] = {
    "validate CONTRACT_OR_SCHEMA": lambda tmp, doc: ["validate", doc, "{}"],
    "validate ARGS_JSON": lambda tmp, doc: ["validate", _good(tmp), doc],
    "diff BEFORE": lambda tmp, doc: ["diff", doc, _good(tmp)],
    "diff AFTER": lambda tmp, doc: ["diff", _good(tmp), doc],
    "publish FILE": lambda tmp, doc: [
        "publish", _good(tmp), doc, "--registry", f"sqlite://{tmp / 'store' / 'r.db'}"],
}


@pytest.mark.parametrize("slot", sorted(SLOTS))
@pytest.mark.parametrize("case", sorted(DOCUMENTS))
def test_a_bad_document_is_bad_input_with_a_stable_code_and_writes_nothing(
        tmp_path: Path, case: str, slot: str) -> None:
    doc = DOCUMENTS[case]
    (tmp_path / "store").mkdir()
    outcome = run(tmp_path, SLOTS[slot](tmp_path, str(_place(tmp_path, doc))))
    assert_outcome(outcome, 2, doc.error)
    if doc.offset is not None:
        assert json.loads(outcome.stdout)["error"]["data"]["offset"] == doc.offset
    assert list((tmp_path / "store").iterdir()) == []  # publish checks every file first


@pytest.mark.parametrize("case", sorted(c for c, d in DOCUMENTS.items() if d.special is None))
def test_a_bad_document_in_a_served_estate_is_bad_input(tmp_path: Path, case: str) -> None:
    doc = DOCUMENTS[case]
    _place(tmp_path, doc, "estate")
    (tmp_path / "store").mkdir()
    outcome = run(tmp_path, ["serve", "--estate", str(tmp_path / "estate"),
                             "--registry", f"sqlite://{tmp_path / 'store' / 'r.db'}"])
    assert_outcome(outcome, 2, doc.error)
    assert list((tmp_path / "store").iterdir()) == []


def test_a_document_exactly_at_the_cap_is_read(tmp_path: Path) -> None:
    arguments = tmp_path / "arguments.json"
    arguments.write_bytes(b"{}" + b" " * (CAP - 2))
    assert_outcome(run(tmp_path, ["validate", _good(tmp_path), str(arguments)]), 0, None)


def test_arguments_over_the_cap_on_standard_input_are_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", _good(tmp_path), "-", "--json"],
                                input=b"{}" + b" " * (CAP - 1))
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert (result.exit_code, _error_code(result.stdout.strip())) == (2, "file.too_large")


def test_inline_json_longer_than_a_file_name_is_read_as_json(tmp_path: Path) -> None:
    outcome = run(tmp_path, ["validate", _good(tmp_path), json.dumps({"reference": "x" * 300})])
    assert_outcome(outcome, 0, None)
    assert json.loads(outcome.stdout) == {"errors": [], "valid": True}


def test_the_documented_cap_is_the_one_enforced() -> None:
    from toolkeeper.cli.sources import MAX_DOCUMENT_BYTES

    assert MAX_DOCUMENT_BYTES == CAP


# --- stores: every registry command against every kind of store ----------------------------

READ_ONLY = ("versions", "discover", "audit")
COMMANDS: dict[str, list[str]] = {
    "publish": ["publish"],  # the contract file is added by the test
    "versions": ["versions", NAME],
    "deprecate": ["deprecate", NAME, "1.0.0"],
    "retire": ["retire", NAME, "1.0.0"],
    "discover": ["discover", "--tenant", "acme", "--clearance", "internal"],
    "audit": ["audit"],
    "serve": ["serve"],
}


def _registry_at(path: Path) -> None:
    with Registry.open(f"sqlite://{path}") as registry:
        registry.publish(spec_from_mapping(_contract()), actor="alice")


def _sql(*statements: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with sqlite3.connect(path) as conn:
            for statement in statements:
                conn.execute(statement)
        conn.close()
    return make


def _damaged(path: Path) -> None:
    """A registry whose second page (the root of ``schema_version``) is overwritten."""
    _registry_at(path)
    with sqlite3.connect(path) as conn:
        page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.close()
    with path.open("r+b") as file:
        file.seek(page)
        file.write(b"\xde\xad\xbe\xef" * (page // 4))


def _newer(path: Path) -> None:
    _registry_at(path)
    _sql("INSERT INTO schema_version VALUES (999, 'from the future', datetime('now'))")(path)


@dataclass(frozen=True)
class Store:
    make: Callable[[Path], None] | None  # builds the file; None: no file
    error: str | None  # every command's error code (exit 2); None: a usable store
    overrides: Mapping[str, tuple[int, str | None]] = field(default_factory=dict)
    registry: tuple[str, ...] | None = None  # the --registry arguments; None: the file
    env: Mapping[str, str] = field(default_factory=dict)


_MUST_EXIST = {command: (2, "registry.missing")
               for command in ("versions", "deprecate", "retire", "discover", "audit")}

STORES: dict[str, Store] = {
    "no file": Store(None, None, _MUST_EXIST),
    "an empty file": Store(lambda path: path.write_bytes(b""), None, _MUST_EXIST),
    "a registry": Store(_registry_at, None),
    "an unrelated contracts table": Store(_sql(
        "CREATE TABLE contracts (id INTEGER PRIMARY KEY, body TEXT)",
        "INSERT INTO contracts (body) VALUES ('theirs')"), "registry.foreign"),
    "unrelated tables": Store(_sql("CREATE TABLE t (x)"), "registry.foreign"),
    "another tool's schema_version table": Store(_sql(
        "CREATE TABLE schema_version (version INTEGER)",
        "INSERT INTO schema_version VALUES (1)"), "registry.foreign"),
    "a registry with a damaged page": Store(_damaged, "registry.damaged"),
    "a text file": Store(lambda path: path.write_text("not a database\n" * 100),
                         "registry.damaged"),
    "a directory": Store(lambda path: path.mkdir(), "registry.not_a_file"),
    "a registry from a newer toolkeeper": Store(_newer, "registry.schema_too_new"),
    "an empty --registry": Store(_registry_at, "registry.url_invalid", registry=("",)),
    "an empty TOOLKEEPER_REGISTRY": Store(_registry_at, "registry.url_invalid", registry=(),
                                          env={"TOOLKEEPER_REGISTRY": ""}),
}


def _files(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` and its bytes; SQLite's shared-memory index (``-shm``)
    and an empty write-ahead log, which a read-only reader of a WAL database leaves behind,
    hold no data and are left out."""
    found: dict[str, bytes] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.name.endswith("-shm"):
            content = path.read_bytes()
            if content or not path.name.endswith("-wal"):
                found[str(path.relative_to(directory))] = content
    return found


def _store_case(tmp_path: Path, case: str) -> tuple[Store, Path, list[str]]:
    store = STORES[case]
    directory = tmp_path / "store"
    directory.mkdir()
    path = directory / "registry.db"
    if store.make is not None:
        store.make(path)
    registry = list(store.registry if store.registry is not None
                    else ("--registry", f"sqlite://{path}"))
    if store.registry == ("",):
        registry = ["--registry", ""]
    return store, directory, registry


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(STORES))
def test_every_command_refuses_an_unusable_store_and_reads_never_write(
        tmp_path: Path, case: str, command: str) -> None:
    store, directory, registry = _store_case(tmp_path, case)
    args = list(COMMANDS[command])
    if command == "publish":
        args.append(_good(tmp_path))
    before = _files(directory)
    outcome = run(tmp_path, [*args, *registry], env=store.env)
    expected = store.overrides.get(command, (2, store.error) if store.error else (0, None))
    assert_outcome(outcome, *expected)
    if command in READ_ONLY or expected[0] != 0:
        assert _files(directory) == before
        assert not (directory / "registry.db").exists() or store.make is not None
    assert not (tmp_path / "xdg").exists()  # the default store was never touched


REFUSALS: dict[str, tuple[list[str], str]] = {
    "versions of an unknown tool": (["versions", "no.such.tool"], "registry.not_found"),
    "deprecate an unknown version": (["deprecate", NAME, "9.9.9"], "registry.not_found"),
    "retire an unknown version": (["retire", NAME, "9.9.9"], "registry.not_found"),
    "publish new content under a published version": (["publish"], "publish.immutable"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refusal_by_a_working_registry_exits_1(tmp_path: Path, case: str) -> None:
    _, directory, registry = _store_case(tmp_path, "a registry")
    args, error = REFUSALS[case]
    if args == ["publish"]:
        changed = tmp_path / "changed.json"
        changed.write_text(json.dumps(_contract(description="Something else.")))
        args = ["publish", str(changed)]
    before = _files(directory)
    assert_outcome(run(tmp_path, [*args, *registry]), 1, error)
    if args[0] in READ_ONLY:
        assert _files(directory) == before
