"""A schema whose ``$ref`` leaves its document is bad input on every command that reads one:
``validate`` (contract or bare schema), ``diff``, ``publish`` and ``serve --estate`` exit 2 with
the rule's code and the JSON path of the reference, before anything is published or served;
the referenced file is never read (its content never shows) and the host never sees a
connection. Every wait is bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ref_hosts import schema_host
from toolkeeper.cli.main import cli
from toolkeeper.registry import Registry

SECRET = ["s3cr3t-alpha", "s3cr3t-beta"]
X_REF = '$.inputSchema.properties.x["$ref"]'


def _contract(ref: str) -> dict[str, Any]:
    return {"name": "lookup", "version": "1.0.0", "title": "Lookup", "description": "Looks up.",
            "inputSchema": {"type": "object", "properties": {"x": {"$ref": ref}}},
            "dataClassification": "internal", "sideEffect": "read"}


def _write(directory: Path, name: str, value: Any) -> str:
    path = directory / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


@pytest.fixture
def secret_uri(tmp_path: Path) -> str:
    return Path(_write(tmp_path, "any.json", {"enum": SECRET})).as_uri()


def _run(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert not any(s in result.output for s in SECRET)
    return result.exit_code, json.loads(result.stdout)


def _error(out: dict[str, Any]) -> tuple[str, str]:
    return out["error"]["code"], out["error"]["path"]


def test_validate_refuses_a_contract_whose_ref_names_a_file(tmp_path: Path,
                                                           secret_uri: str) -> None:
    path = _write(tmp_path, "c.json", _contract(secret_uri))
    code, out = _run("validate", path, '{"x": "guess"}')
    assert (code, _error(out)) == (2, ("contract.schema_ref_external", X_REF))


def test_validate_refuses_a_bare_schema_whose_ref_names_a_host(tmp_path: Path) -> None:
    with schema_host() as host:
        path = _write(tmp_path, "s.json", {"properties": {"x": {"$ref": f"{host.url}/s.json"}}})
        code, out = _run("validate", path, '{"x": "guess"}')
        assert (code, _error(out)) == (2, ("schema.ref_external", '$.properties.x["$ref"]'))
        assert host.connections == 0


def test_diff_refuses_a_bare_schema_whose_ref_names_a_file(tmp_path: Path,
                                                           secret_uri: str) -> None:
    before = _write(tmp_path, "a.json", {"properties": {"x": {"type": "string"}}})
    after = _write(tmp_path, "b.json", {"properties": {"x": {"$ref": secret_uri}}})
    code, out = _run("diff", before, after)
    assert (code, _error(out)) == (2, ("schema.ref_external", '$.properties.x["$ref"]'))


def test_publish_refuses_a_remote_ref_and_stores_nothing(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'registry.db'}"
    with schema_host() as host:
        path = _write(tmp_path, "c.json", _contract(f"{host.url}/s.json"))
        code, out = _run("publish", path, "--registry", url)
        assert (code, _error(out)) == (2, ("contract.schema_ref_external", X_REF))
        assert host.connections == 0
    registry = Registry.open(url)
    assert registry.latest("lookup") is None
    registry.close()


def test_serve_refuses_an_estate_with_a_remote_ref_before_serving(tmp_path: Path) -> None:
    estate = tmp_path / "estate"
    estate.mkdir()
    with schema_host() as host:
        _write(estate, "lookup.json", _contract(f"{host.url}/s.json"))
        done = subprocess.run(
            [sys.executable, "-m", "toolkeeper.cli.serve_cmd", "--registry", "memory:",
             "--estate", str(estate), "--stdio"],
            input=b"", capture_output=True, timeout=60, env=dict(os.environ), check=False)
        assert host.connections == 0
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (2, b"")
    assert "[contract.schema_ref_external]" in err
    assert "Traceback" not in err
