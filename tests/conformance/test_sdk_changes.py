"""What an SDK did to an answer, as kinds and JSON paths (SPEC 5.4), without running an SDK:
bookkeeping dropped is an accounted removal, anything else dropped is semantic loss, a field
only the SDK has is synthesized (or promoted, when it holds what a dropped field held), and how
the SDK answered as a whole is judged against the answer's validity."""

from __future__ import annotations

from typing import Any

from toolkeeper.conformance.sdk_changes import Change, diff_outcome, expected_projection

ACCOUNTED = frozenset({"_meta", "cacheScope", "resultType", "ttlMs"})
RESULT = {"resultType": "complete", "_meta": {"k": 1}, "content": [{"type": "text", "text": "ok"}],
          "futureHint": {"x": 1}}


def _value(value: Any) -> dict[str, Any]:
    return {"outcome": "value", "value": value}


def _raised(code: int | None) -> dict[str, Any]:
    return {"outcome": "exception", "exception": {"type": "E", "code": code, "message": ""}}


def _ok(result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": result}


def test_dropped_bookkeeping_is_accounted_and_a_dropped_additive_field_is_semantic_loss() -> None:
    sdk = {"content": [{"type": "text", "text": "ok"}]}
    assert diff_outcome(_ok(RESULT), True, _value(sdk), ACCOUNTED) == (
        Change("accounted_removal", "$._meta"), Change("semantic_loss", "$.futureHint"),
        Change("accounted_removal", "$.resultType"))


def test_a_field_only_the_sdk_has_is_synthesized_and_a_moved_one_is_promoted() -> None:
    sdk = {"content": RESULT["content"], "isError": False, "hint": {"x": 1},
           "resultType": "complete", "_meta": {"k": 1}}
    changes = diff_outcome(_ok(RESULT), True, _value(sdk), ACCOUNTED)
    assert [c.to_json() for c in changes] == [
        {"kind": "semantic_loss", "path": "$.futureHint"},
        {"kind": "promoted", "path": "$.hint", "from": "$.futureHint"},
        {"kind": "synthesized", "path": "$.isError"}]


def test_a_value_of_another_json_type_is_changed_at_its_path() -> None:
    sdk = {**RESULT, "content": [{"type": "text", "text": "ok", }], "futureHint": {"x": 1.5}}
    assert diff_outcome(_ok(RESULT), True, _value(sdk), ACCOUNTED) == (
        Change("changed", "$.futureHint.x"),)


def test_raising_on_a_valid_result_is_rejected_and_on_an_invalid_one_is_no_change() -> None:
    assert diff_outcome(_ok(RESULT), True, _raised(None), ACCOUNTED) == (Change("rejected", "$"),)
    assert diff_outcome(_ok(RESULT), False, _raised(None), ACCOUNTED) == ()


def test_a_value_for_an_invalid_answer_is_accepted_invalid_with_its_field_changes() -> None:
    sdk = {k: v for k, v in RESULT.items() if k != "futureHint"}
    assert diff_outcome(_ok(RESULT), False, _value(sdk), ACCOUNTED) == (
        Change("accepted_invalid", "$"), Change("semantic_loss", "$.futureHint"))


def test_an_error_must_surface_with_its_own_code() -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}
    assert diff_outcome(error, True, _raised(-32602), ACCOUNTED) == ()
    assert diff_outcome(error, True, _raised(None), ACCOUNTED) == (Change("error_changed", "$"),)
    assert diff_outcome(error, True, _value({"isError": True}), ACCOUNTED) == (
        Change("error_changed", "$"),)


def test_the_expected_projection_leaves_bookkeeping_out_and_keeps_an_errors_code() -> None:
    assert expected_projection(_ok(RESULT), ACCOUNTED) == {"outcome": "value", "projection": {
        "content": RESULT["content"], "futureHint": {"x": 1}}}
    assert expected_projection({"error": {"code": -32602, "message": "m"}}, ACCOUNTED) == {
        "outcome": "exception", "code": -32602}
