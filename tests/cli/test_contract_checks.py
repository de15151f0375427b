"""Contract checks for CI: ``diff --fail-on``, ``publish --dry-run``, ``show`` and ``diff`` of
stored versions, with their exit codes, over a real SQLite registry file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli
from toolkeeper.registry import Registry

V3, V4 = "db.query-3.0.0.json", "db.query-4.0.0.json"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def registry_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'registry.db'}"


def _stored(registry_url: str) -> tuple[list[str], int]:
    with Registry.open(registry_url, create=False) as registry:
        return [f"{s.name} {s.version}" for n in registry.names()
                for s in registry.versions(n)], len(registry.audit())


@pytest.mark.parametrize(("level", "code"), [(None, 0), ("major", 1), ("minor", 1),
                                             ("patch", 1)])
def test_diff_fail_on_exits_1_when_a_major_change_reaches_the_level(
        examples_dir: Path, level: str | None, code: int) -> None:
    args = ["diff", str(examples_dir / V3), str(examples_dir / V4)]
    exit_code, out, _ = _run(*args, *(["--fail-on", level] if level else []))
    assert exit_code == code
    assert out.splitlines()[-1].startswith("MAJOR:")


@pytest.mark.parametrize(("level", "code"), [("major", 0), ("minor", 1), ("patch", 1)])
def test_diff_fail_on_a_minor_change(tmp_path: Path, level: str, code: int) -> None:
    before = {"type": "object", "properties": {"a": {"type": "string"}}}
    after = {"type": "object", "properties": {"a": {"type": "string"},
                                              "b": {"type": "string"}}}
    (tmp_path / "a.json").write_text(json.dumps(before))
    (tmp_path / "b.json").write_text(json.dumps(after))
    exit_code, out, _ = _run("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                             "--fail-on", level, "--json")
    assert exit_code == code
    assert json.loads(out)["bump"] == "minor"


def test_diff_fail_on_patch_passes_when_nothing_changed(examples_dir: Path) -> None:
    same = str(examples_dir / V4)
    assert _run("diff", same, same, "--fail-on", "patch")[0] == 0


def test_publish_dry_run_prints_the_verdict_and_stores_nothing(
        examples_dir: Path, registry_url: str) -> None:
    assert _run("publish", str(examples_dir / V3), "--registry", registry_url)[0] == 0
    before = _stored(registry_url)
    code, out, _ = _run("publish", "--dry-run", str(examples_dir / V3), str(examples_dir / V4),
                        "--registry", registry_url)
    assert code == 0
    assert out.splitlines() == ["unchanged db.query 3.0.0",
                                "would publish db.query 4.0.0 (MAJOR against 3.0.0)"]
    assert _stored(registry_url) == before


def test_publish_dry_run_exits_1_on_a_refusal_and_audits_nothing(
        tmp_path: Path, examples_dir: Path, registry_url: str) -> None:
    assert _run("publish", str(examples_dir / V3), "--registry", registry_url)[0] == 0
    v4 = json.loads((examples_dir / V4).read_text())
    v4["version"] = "3.1.0"  # a MAJOR change as a MINOR release
    (tmp_path / "bad.json").write_text(json.dumps(v4))
    before = _stored(registry_url)
    code, out, _ = _run("publish", "--dry-run", str(tmp_path / "bad.json"),
                          "--registry", registry_url, "--json")
    assert code == 1
    assert json.loads(out)["error"]["rule"] == "publish.bump_required"
    assert _stored(registry_url) == before


def test_publish_dry_run_json_lines(examples_dir: Path, registry_url: str) -> None:
    assert _run("publish", str(examples_dir / V3), "--registry", registry_url)[0] == 0
    code, out, _ = _run("publish", "--dry-run", str(examples_dir / V4),
                        "--registry", registry_url, "--json")
    assert code == 0
    line = json.loads(out)
    assert (line["outcome"], line["against"], line["bump"]) == (
        "would_publish", "3.0.0", "major")
    assert line["changes"] and {"rule", "path", "bump", "reason"} <= set(line["changes"][0])


def test_show_prints_a_stored_contract_as_canonical_json_that_diffs_clean(
        tmp_path: Path, examples_dir: Path, registry_url: str) -> None:
    assert _run("publish", str(examples_dir / V3), str(examples_dir / V4),
                "--registry", registry_url)[0] == 0
    code, out, _ = _run("show", "db.query@3.0.0", "--registry", registry_url)
    assert code == 0
    shown = json.loads(out)
    assert (shown["name"], shown["version"]) == ("db.query", "3.0.0")
    assert out.rstrip("\n") == json.dumps(shown, sort_keys=True, separators=(",", ":"),
                                          ensure_ascii=False)
    assert json.loads(_run("show", "db.query", "--registry", registry_url)[1])[
        "version"] == "4.0.0"  # the newest active
    (tmp_path / "shown.json").write_text(out)
    assert _run("diff", str(tmp_path / "shown.json"), str(examples_dir / V3),
                "--fail-on", "patch")[0] == 0


@pytest.mark.parametrize(("reference", "code"), [("db.query@9.9.9", 1), ("nothing", 1),
                                                 ("db.query@x", 2), ("@1.0.0", 2)])
def test_show_of_what_is_not_stored_or_not_a_reference(
        examples_dir: Path, registry_url: str, reference: str, code: int) -> None:
    assert _run("publish", str(examples_dir / V3), "--registry", registry_url)[0] == 0
    assert _run("show", reference, "--registry", registry_url)[0] == code


def test_diff_of_two_stored_versions(examples_dir: Path, registry_url: str) -> None:
    assert _run("publish", str(examples_dir / V3), str(examples_dir / V4),
                "--registry", registry_url)[0] == 0
    code, out, _ = _run("diff", "db.query@3.0.0", "db.query@4.0.0", "--registry", registry_url,
                        "--json")
    assert code == 0 and json.loads(out)["bump"] == "major"
    stored_vs_file = _run("diff", "db.query@4.0.0", str(examples_dir / V4),
                          "--registry", registry_url, "--fail-on", "patch")
    assert stored_vs_file[0] == 0
    assert _run("diff", "db.query@3.0.0", "db.query@4.0.0", "--registry", registry_url,
                "--fail-on", "major")[0] == 1
    assert _run("diff", "db.query@3.0.0", "db.query@5.0.0", "--registry", registry_url)[0] == 1
