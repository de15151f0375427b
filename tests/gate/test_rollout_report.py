"""``gate report --rollout TOOL --registry URL --html FILE``: the page of a rollout the gate
decided (rollout_report_kit: promoted once, then rolled back), its decisions in order with
their reasons not passed and their signer, each envelope verified under the trusted keys (or
said not checked without one), the last decision's health-window verdicts and input digests
from its signed statement; escaped, the same bytes for the same store; bad input exit 2 with
its code."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rollout_report_kit import HOSTILE, KEY, rollout_with_decisions

from toolkeeper.cli.gate_report_cmd import report_cmd
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return rollout_with_decisions(tmp_path_factory.mktemp("rollout"))


def _report(url: str, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(report_cmd, ["--rollout", "pay", "--registry", url, "--html",
                                           str(out), "--json", *extra], catch_exceptions=False)


def _trust(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "controller.key").write_text(KEY.secret.hex())
    return "--trust", f"{KEY.key_id}={tmp_path / 'controller.key'}"


def _rows(page: str, section: str) -> list[list[str]]:
    found = re.search(rf'<section id="{section}">(.*?)</section>', page, re.S)
    assert found is not None, section
    return [[html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", found.group(1), re.S) if "<td" in row]


def test_the_rollout_page_shows_each_decision_in_order_verified(url: str,
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "rollout.html"
    result = _report(url, out, *_trust(tmp_path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"html": str(out), "tool": "pay",
                                         "state": "rolled_back", "decisions": 2,
                                         "lastOutcome": "rollback"}
    page = out.read_text(encoding="utf-8")
    assert "<h1 class=\"failed\">Rollout: rolled_back \u2014 pay 2.0.0</h1>" in page
    decisions = _rows(page, "decisions")
    assert [(d[0], d[1], d[3], d[4], d[5]) for d in decisions] == [
        ("1", "promote", "1 of 3", "25%", "running"),
        ("2", "rollback", "2 of 3", "50%", "rolled_back")]
    assert [d[8] for d in decisions] == ["verified", "verified"]
    assert {d[7] for d in decisions} == {f"{KEY.key_id} (hmac-sha256)"}
    assert "window.error_rate failed" in decisions[1][6]       # a reason that did not pass
    assert "window.error_rate" not in decisions[0][6]          # passed: not listed
    with Registry.open(url, create=False) as registry:
        book = rollout_book(registry)
        rollout = book.get("pay")
        assert rollout is not None
        last = book.decisions(rollout)[-1]
    statement = json.loads(base64.b64decode(last.envelope["payload"]))
    inputs = statement["predicate"]["inputs"]
    last_rows = _rows(page, "last-decision")
    assert sorted([r[0], r[1]] for r in last_rows if len(r) == 2) == sorted(
        [k, v] for k, v in inputs.items())                     # every input's digest
    assert html.escape(inputs["healthWindows"]) in page
    error_rate = [r for r in last_rows if r[:2] == ["window.error_rate", "failed"]]
    assert error_rate and error_rate[0][2] == "0.25"          # one call in four failed


def test_the_page_is_escaped_and_the_same_bytes_each_time(url: str, tmp_path: Path) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    assert _report(url, first, *_trust(tmp_path)).exit_code == 0
    assert _report(url, second, *_trust(tmp_path)).exit_code == 0
    page = first.read_text(encoding="utf-8")
    assert page == second.read_text(encoding="utf-8")
    assert html.escape(HOSTILE) in page and HOSTILE not in page  # stored text is text
    assert "<script" not in page


def test_without_a_trusted_key_the_envelopes_are_read_not_checked(url: str,
                                                                   tmp_path: Path) -> None:
    out = tmp_path / "rollout.html"
    assert _report(url, out).exit_code == 0
    decisions = _rows(out.read_text(encoding="utf-8"), "decisions")
    assert [d[8] for d in decisions] == ["not checked (no trusted key)"] * 2
    assert [d[1] for d in decisions] == ["promote", "rollback"]


def test_another_key_does_not_verify_the_envelopes(url: str, tmp_path: Path) -> None:
    (tmp_path / "other.key").write_text("ff" * 32)
    out = tmp_path / "rollout.html"
    assert _report(url, out, "--trust", f"other={tmp_path / 'other.key'}").exit_code == 0
    decisions = _rows(out.read_text(encoding="utf-8"), "decisions")
    assert [d[8] for d in decisions] == ["attestation.untrusted_signer"] * 2


@pytest.mark.parametrize(("args", "code"), [
    (["--rollout", "nothing"], "release.not_found"),
    (["BUNDLE.json", "--rollout", "pay"], "cli.option_conflict"),
    (["--rollout", "pay", "--decision", "d.json"], "cli.option_conflict"),
    ([], "cli.option_missing"),
])
def test_bad_input_is_exit_2_with_its_code(url: str, tmp_path: Path, args: list[str],
                                           code: str) -> None:
    result = CliRunner().invoke(report_cmd, [*args, "--registry", url, "--html",
                                             str(tmp_path / "x.html"), "--json"])
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"]["code"] == code
    assert not (tmp_path / "x.html").exists()
