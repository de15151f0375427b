"""The matrix's own machinery, without clients: how an op's output is judged, how a cell becomes
a table row and back, the install cache's rebuild of an interrupted build, and the runner."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from interop_kit import (
    OPS,
    ClientSpec,
    DriverError,
    cached_dir,
    cell_row,
    judge,
    judge_run,
    parse_rows,
    render_doc,
    row_key,
    run_driver,
)

RETIRED_DATA = {"reason": "schema_version_retired", "action": "relist", "tool": "db.query"}
SPEC = ClientSpec("demo 1.0", ("legacy", "2026-07-28"), ("http",), OPS[:-1], lambda cache: [])


def _op(outcome: str, **fields: Any) -> dict[str, Any]:
    return {"outcome": outcome, "code": None, "data": None, "isError": None, "structured": None,
            "tools": None, "detail": "", **fields}


def _all_pass(era: str) -> dict[str, Any]:
    ok = _op("result", isError=False, structured={"id": 1})
    ops = {op: ok for op in OPS}
    ops["list"] = _op("result", tools=["db.query", "payments.lookup", "tickets.create", "x"])
    ops["call_invalid"] = _op("result", isError=True)
    ops["call_unknown"] = _op("error", code=-32602)
    ops["call_retired"] = _op("error", code=-32602, data=RETIRED_DATA)
    ops["ping"] = _op("result") if era == "2025-11-25" else _op("error", code=-32601)
    return {"client": "demo 1.0", "era": era, "ops": ops}


@pytest.mark.parametrize(("mode", "era"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")])
def test_outputs_as_the_spec_promises_have_no_problems(mode: str, era: str) -> None:
    assert judge_run(SPEC, mode, _all_pass(era)) == {}


def test_ping_must_be_method_not_found_in_a_modern_session() -> None:
    assert judge("ping", _op("result"), "2026-07-28") is not None
    assert judge("ping", _op("error", code=-32601), "2025-11-25") is not None


def test_a_transport_failure_where_an_error_is_due_names_what_was_wrong() -> None:
    why = judge("call_retired", _op("failure", detail="HTTPStatusError: 400"), "2025-11-25")
    assert why is not None and "wrong: outcome, code, data" in why


def test_retired_error_without_the_relist_action_fails() -> None:
    got = _op("error", code=-32602, data={"reason": "schema_version_retired"})
    assert judge("call_retired", got, "2025-11-25") is not None


def test_an_error_whose_code_the_api_hides_passes_and_the_row_says_so() -> None:
    output = _all_pass("2025-11-25")
    output["ops"]["call_retired"] = _op("error")
    row = cell_row(SPEC, "legacy", "http", output)
    assert row[4 + OPS.index("call_retired")] == "pass (code hidden)"


def test_a_wrong_era_an_op_left_out_and_a_failing_op_each_show_in_the_row() -> None:
    output = _all_pass("2025-11-25")
    output["ops"]["call_unknown"] = _op("failure", detail="session terminated")
    row = cell_row(SPEC, "2026-07-28", "http", output)
    assert row[:4] == ["demo 1.0", "2026-07-28", "http", "FAIL: 2025-11-25"]
    assert row[4 + OPS.index("call_unknown")] == "FAIL: failure"
    assert row[-1] == "—"  # call_after is not among SPEC.ops


def test_rows_survive_a_round_trip_through_the_document_in_sorted_order() -> None:
    rows = {row_key(row): row for row in (
        cell_row(SPEC, mode, "http", _all_pass("2026-07-28" if mode != "legacy" else "2025-11-25"))
        for mode in ("legacy", "2026-07-28"))}
    doc = render_doc(["demo 1.0"], rows)
    assert parse_rows(doc) == rows
    assert doc.index("| demo 1.0 | 2026-07-28 |") < doc.index("| demo 1.0 | legacy |")


def test_an_interrupted_build_is_rebuilt_and_a_finished_one_reused(tmp_path: Path) -> None:
    builds: list[Path] = []

    def build(target: Path) -> None:
        builds.append(target)
        target.mkdir()
        (target / "file").write_text("built")

    (tmp_path / "thing").mkdir()
    (tmp_path / "thing" / "half").write_text("")  # no .ready marker: an interrupted build
    first = cached_dir(tmp_path, "thing", build)
    again = cached_dir(tmp_path, "thing", build)
    assert first == again == tmp_path / "thing"
    assert len(builds) == 1 and not (first / "half").exists()


def test_the_runner_returns_the_last_stdout_line_parsed() -> None:
    script = "print('noise'); print('{\"client\": \"x\", \"era\": null, \"ops\": {}}')"
    assert run_driver([sys.executable, "-c", script])["client"] == "x"


def test_a_driver_that_overruns_is_killed_and_reported() -> None:
    with pytest.raises(DriverError, match="overran"):
        run_driver([sys.executable, "-c", "import time; time.sleep(60)"], timeout=1)


def test_a_driver_without_its_json_line_is_reported_with_its_stderr() -> None:
    with pytest.raises(DriverError, match="boom"):
        run_driver([sys.executable, "-c", "import sys; sys.exit('boom')"])
