"""``toolkeeper contracts export MODULE:ATTR DIR``: derived contracts as contract files that
round-trip through ``publish`` and the guard to the identical descriptor; a different file is
never replaced silently; bad input is exit 2 with a stable code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.handler_refs import load_handlers
from toolkeeper.cli.main import cli
from toolkeeper.cli.serve_cmd import read_estate
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.registry import Registry

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "typed_tools.py"
REFERENCE = f"{EXAMPLE}:handlers"
FILES = ["shipping.quote-1.0.0.json", "units.convert-1.0.0.json"]


def _run(*args: str) -> tuple[int, Any, str]:
    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    out = json.loads(done.stdout) if "--json" in args and done.stdout.strip() else None
    return done.exit_code, out, done.stderr


def test_export_writes_one_canonical_contract_file_per_tool_version(tmp_path: Path) -> None:
    code, out, _ = _run("contracts", "export", REFERENCE, str(tmp_path / "out"), "--json")
    assert code == 0
    assert [(row["name"], row["status"]) for row in out] == [
        ("shipping.quote", "written"), ("units.convert", "written")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == FILES
    for name in FILES:
        raw = (tmp_path / "out" / name).read_bytes()
        assert raw == canonical_json(json.loads(raw)) + b"\n"


def test_exported_files_publish_under_the_guard_to_the_identical_descriptor(
        tmp_path: Path) -> None:
    derived = {spec.name: spec for spec in load_handlers(REFERENCE).contracts()}
    assert _run("contracts", "export", REFERENCE, str(tmp_path / "out"))[0] == 0
    assert {s.name: s.content_digest for s in read_estate(tmp_path / "out")} == {
        name: spec.content_digest for name, spec in derived.items()}
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    files = [str(tmp_path / "out" / name) for name in FILES]
    assert _run("publish", "--registry", url, *files)[0] == 0
    assert _run("publish", "--registry", url, *files)[0] == 0  # identical: unchanged
    with Registry.open(url) as registry:
        for name, spec in derived.items():
            stored = registry.latest(name)
            assert stored is not None and stored.to_mcp() == spec.to_mcp()
            assert len(registry.versions(name)) == 1


def test_re_exporting_identical_contracts_leaves_the_files_unchanged(tmp_path: Path) -> None:
    assert _run("contracts", "export", REFERENCE, str(tmp_path))[0] == 0
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    code, out, _ = _run("contracts", "export", REFERENCE, str(tmp_path), "--json")
    assert code == 0 and {row["status"] for row in out} == {"unchanged"}
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before


def test_a_file_with_other_content_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / FILES[1]).write_text('{"name": "units.convert"}\n')
    code, out, _ = _run("contracts", "export", REFERENCE, str(tmp_path), "--json")
    assert code == 1
    assert out["error"]["code"] == "export.would_overwrite"
    assert out["error"]["data"]["files"] == [str(tmp_path / FILES[1])]
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILES[1]]
    assert (tmp_path / FILES[1]).read_text() == '{"name": "units.convert"}\n'


def test_force_replaces_a_file_with_other_content(tmp_path: Path) -> None:
    (tmp_path / FILES[1]).write_text("{}\n")
    code, out, _ = _run("contracts", "export", REFERENCE, str(tmp_path), "--force", "--json")
    assert code == 0 and [row["status"] for row in out] == ["written", "written"]
    assert json.loads((tmp_path / FILES[1]).read_text())["name"] == "units.convert"


UNTYPED = "from toolkeeper.server import ToolHandlers\nhandlers = ToolHandlers()\n" \
          "handlers.bind('t', lambda arguments: 'x')\n"
BAD_TYPED = "from toolkeeper.server import ToolHandlers\nhandlers = ToolHandlers()\n" \
            "@handlers.tool('t', version='1.0.0', title='T')\n" \
            "def t(a: int) -> int:\n    return a\n"


@pytest.mark.parametrize(("source", "attribute", "code"), [
    (UNTYPED, "handlers", "export.no_contracts"),
    (BAD_TYPED, "handlers", "contract.typed_metadata_missing"),
    (UNTYPED, "nothing_here", "cli.handlers_reference"),
    ("raise RuntimeError('boom')\n", "handlers", "cli.handlers_failed"),
])
def test_bad_input_exits_2_with_a_stable_code_and_writes_nothing(
        tmp_path: Path, source: str, attribute: str, code: str) -> None:
    module = tmp_path / "tools_under_test.py"
    module.write_text(source)
    status, out, _ = _run("contracts", "export", f"{module}:{attribute}",
                          str(tmp_path / "out"), "--json")
    assert status == 2 and out["error"]["code"] == code
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
