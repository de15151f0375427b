"""``serve --handlers`` publishes typed handlers' derived contracts through the publish guard at
start, as a real ``python -m toolkeeper`` process: a parameter type changed without a MAJOR
bump is refused (exit 1, the guard's and the classifier's rule ids) and nothing is stored; the
same change with a MAJOR bump is published and served; an identical restart is a no-op."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.contracts.semver import Version
from toolkeeper.registry import Registry

COMMAND = [sys.executable, "-m", "toolkeeper", "serve"]
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}

TOOL = '''
@handlers.tool("calc.double", version={version!r}, title="Double", data_classification="public",
               side_effect="read", required_scopes=[], tenants=[])
def double(a: {kind}) -> {kind}:
    """Twice a."""
    return a * 2
'''
EXTRA = '''
@handlers.tool("calc.add", version="1.0.0", title="Echo", data_classification="public",
               side_effect="read", required_scopes=[], tenants=[])
def echo(text: str) -> str:
    """The text."""
    return text
'''


def _module(tmp_path: Path, version: str, kind: str, *, extra: bool = False) -> str:
    path = tmp_path / "typed_tools.py"
    path.write_text("from toolkeeper.server import ToolHandlers\nhandlers = ToolHandlers()\n"
                    + TOOL.format(version=version, kind=kind) + (EXTRA if extra else ""))
    return f"{path}:handlers"


def _serve(url: str, reference: str, *messages: dict[str, Any]
           ) -> tuple[int, list[dict[str, Any]], str]:
    stdin = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    done = subprocess.run([*COMMAND, "--registry", url, "--handlers", reference, "--stdio"],
                          input=stdin, capture_output=True, timeout=60, check=False,
                          env=dict(os.environ))
    return (done.returncode, [json.loads(line) for line in done.stdout.splitlines()],
            done.stderr.decode())


def _call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "calc.double", "arguments": arguments, "_meta": ENVELOPE}}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'registry.db'}"


def _versions(url: str, name: str) -> list[str]:
    with Registry.open(url) as registry:
        return [str(spec.version) for spec in registry.versions(name)]


def test_a_changed_parameter_type_without_a_major_bump_is_refused_and_nothing_is_stored(
        tmp_path: Path, url: str) -> None:
    code, out, _ = _serve(url, _module(tmp_path, "1.0.0", "int"), _call({"a": 2}))
    assert code == 0 and out[0]["result"]["structuredContent"] == {"result": 4}
    code, out, err = _serve(url, _module(tmp_path, "1.1.0", "str", extra=True))
    assert (code, out) == (1, [])
    assert "[publish.bump_required]" in err
    assert "$.inputSchema.properties.a.type" in err and "input.type.narrowed" in err
    assert "Traceback" not in err
    assert _versions(url, "calc.double") == ["1.0.0"]
    assert _versions(url, "calc.add") == []  # all or none: the new tool sorts first, yet is
    # not stored either


def test_the_same_change_with_a_major_bump_is_published_and_served(
        tmp_path: Path, url: str) -> None:
    assert _serve(url, _module(tmp_path, "1.0.0", "int"))[0] == 0
    code, out, err = _serve(url, _module(tmp_path, "2.0.0", "str"), _call({"a": "ab"}))
    assert code == 0, err
    assert out[0]["result"]["content"][0]["text"] == "abab"  # str: a text result
    assert _versions(url, "calc.double") == ["1.0.0", "2.0.0"]


def test_restarting_with_the_identical_contract_publishes_nothing(
        tmp_path: Path, url: str) -> None:
    reference = _module(tmp_path, "1.0.0", "int")
    assert _serve(url, reference)[0] == 0
    assert _serve(url, reference)[0] == 0
    with Registry.open(url) as registry:
        publishes = [e for e in registry.audit() if e.action == "publish"]
        assert [(e.version, e.rule) for e in publishes] == [("1.0.0", None)]
        stored = registry.get("calc.double", Version.parse("1.0.0"))
        assert stored is not None and stored.publisher == "toolkeeper-serve"
