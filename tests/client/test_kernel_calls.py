"""The kernel's call loop against an in-memory session (SPEC 4, issue 15): pinning, local
validation, repair, the one model turn, and the single re-list on a refusal."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from kernel_session_kit import FakeSession, demo_descriptor, descriptor

from toolkeeper.client.kernel import Kernel, is_relist_refusal
from toolkeeper.client.model import ScriptedModel
from toolkeeper.contracts.spec import SideEffect
from toolkeeper.errors import ClientError

T = TypeVar("T")

PAYMENTS = demo_descriptor("payments.lookup-1.0.0.json")
DB_V3 = demo_descriptor("db.query-3.0.0.json")
DB_V4 = demo_descriptor("db.query-4.0.0.json")
SEED_ARGS = {"reference": "PMT771", "include_legs": "yes", "urgent": True}
CORRECTED = {"reference": "PMT-771", "include_legs": True}


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def _session(*tools: dict[str, Any]) -> FakeSession:
    session = FakeSession()
    for tool in tools:
        session.publish(tool)
    return session


def test_valid_arguments_go_out_as_given_pinned_to_the_listed_schema_version() -> None:
    session = _session(PAYMENTS)
    outcome = run(Kernel(session).call("payments.lookup", {"reference": "PMT-771"}))
    assert outcome.ok and outcome.sent and not outcome.repairs and not outcome.errors
    assert session.lists == 1 and len(session.sent) == 1
    assert session.sent[0].arguments == {"reference": "PMT-771"}
    assert session.sent[0].meta == {"schemaVersion": "1.0.0"}
    assert outcome.to_dict()["schemaVersion"] == "1.0.0"


def test_a_server_without_versions_gets_no_schema_version() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    session = _session(descriptor("echo", schema))
    outcome = run(Kernel(session).call("echo", {"text": "hi"}, meta={"trace": "t1"}))
    assert outcome.ok and outcome.schema_version is None
    assert session.sent[0].meta == {"trace": "t1"}
    run(Kernel(session).call("echo", {"text": "hi"}))
    assert session.sent[1].meta is None


def test_the_listing_is_reused_across_calls_and_dropped_on_tools_changed() -> None:
    session = _session(PAYMENTS)
    kernel = Kernel(session)
    run(kernel.call("payments.lookup", {"reference": "PMT-771"}))
    run(kernel.call("payments.lookup", {"reference": "PMT-772"}))
    assert session.lists == 1
    kernel.tools_changed()
    run(kernel.call("payments.lookup", {"reference": "PMT-772"}))
    assert session.lists == 2


def test_seed_trace_repair_drops_urgent_and_the_model_gets_the_two_remaining_errors_once() -> None:
    session = _session(PAYMENTS)
    model = ScriptedModel([CORRECTED])
    outcome = run(Kernel(session, model=model).call("payments.lookup", SEED_ARGS))
    assert [r.to_dict() for r in outcome.repairs] == [
        {"path": "$.urgent", "rule": "drop.additional_property", "before": True}]
    assert len(model.turns) == 1
    turn = model.turns[0]
    assert [(e.path, e.keyword) for e in turn.errors] == [
        ("$.include_legs", "type"), ("$.reference", "pattern")]
    assert turn.arguments == {"reference": "PMT771", "include_legs": "yes"}
    assert outcome.ok and outcome.model_turns == 1 and outcome.errors == ()
    assert [s.arguments for s in session.sent] == [CORRECTED]


def test_without_a_model_the_remaining_errors_stop_the_call() -> None:
    session = _session(PAYMENTS)
    outcome = run(Kernel(session).call("payments.lookup", SEED_ARGS))
    assert not outcome.sent and not outcome.ok and session.sent == []
    assert [(e["path"], e["keyword"]) for e in outcome.to_dict()["errors"]] == [
        ("$.include_legs", "type"), ("$.reference", "pattern")]


def test_without_repair_all_three_sorted_errors_reach_the_model() -> None:
    session = _session(PAYMENTS)
    model = ScriptedModel([CORRECTED])
    outcome = run(Kernel(session, model=model, repair=False).call("payments.lookup", SEED_ARGS))
    assert [(e.path, e.keyword) for e in model.turns[0].errors] == [
        ("$.include_legs", "type"), ("$.reference", "pattern"),
        ("$.urgent", "additionalProperties")]
    assert outcome.ok and outcome.repairs == ()


def test_a_model_answer_the_contract_refuses_is_never_sent() -> None:
    session = _session(PAYMENTS)
    model = ScriptedModel([{"reference": "PMT-771", "include_legs": "true"}])
    outcome = run(Kernel(session, model=model).call("payments.lookup", SEED_ARGS))
    assert session.sent == [] and not outcome.sent and outcome.model_turns == 1
    assert [(e.path, e.keyword) for e in outcome.errors] == [("$.include_legs", "type")]


def test_a_model_answer_as_json_text_is_decoded_and_sent() -> None:
    session = _session(PAYMENTS)
    model = ScriptedModel(['```json\n{"reference": "PMT-771", "include_legs": true}\n```'])
    outcome = run(Kernel(session, model=model).call("payments.lookup", SEED_ARGS))
    assert outcome.ok and session.sent[0].arguments == CORRECTED


def test_an_unlisted_tool_is_listed_once_more_then_refused_locally() -> None:
    session = _session(PAYMENTS)
    kernel = Kernel(session)
    run(kernel.tools())
    outcome = run(kernel.call("nope", {}))
    assert session.lists == 2 and session.sent == []
    assert [(e.path, e.keyword) for e in outcome.errors] == [("$", "tool")]


def _v2_payments() -> dict[str, Any]:
    v2 = demo_descriptor("payments.lookup-1.0.0.json")
    v2["_meta"] = {"schemaVersion": "2.0.0"}
    del v2["inputSchema"]["properties"]["include_legs"]
    return v2


def test_a_relist_refusal_relists_once_revalidates_and_calls_under_the_new_version() -> None:
    session = _session(PAYMENTS)
    kernel = Kernel(session)
    run(kernel.tools())
    session.publish(_v2_payments(), retire_previous=True)
    outcome = run(kernel.call("payments.lookup", {"reference": "PMT-771"}))
    assert outcome.ok and outcome.relisted and outcome.schema_version == "2.0.0"
    assert session.lists == 2
    assert [s.meta for s in session.sent] == [{"schemaVersion": "1.0.0"},
                                              {"schemaVersion": "2.0.0"}]
    assert len(session.executed) == 1 and session.executed[0].meta == {"schemaVersion": "2.0.0"}


def test_a_property_the_new_contract_drops_is_an_incompatibility_not_a_silent_loss() -> None:
    session = _session(PAYMENTS)
    kernel = Kernel(session)
    run(kernel.tools())
    session.publish(_v2_payments(), retire_previous=True)
    outcome = run(kernel.call("payments.lookup", {"reference": "PMT-771", "include_legs": True}))
    assert outcome.incompatible is not None and session.executed == []
    assert [(e.path, e.keyword) for e in outcome.errors] == [
        ("$.include_legs", "additionalProperties")]
    moved = outcome.to_dict()["incompatible"]
    assert (moved["from"], moved["to"]) == ("1.0.0", "2.0.0")
    assert ("$.properties.include_legs", "major") in {
        (c["path"], c["bump"]) for c in moved["changes"]}


def test_db_query_moving_to_four_is_reported_with_the_classifier_rule_ids() -> None:
    session = _session(DB_V3)
    kernel = Kernel(session)
    run(kernel.tools())
    session.publish(DB_V4, retire_previous=True)
    outcome = run(kernel.call("db.query", {"sql": "select 1", "timeout_ms": 5000}))
    assert outcome.relisted and outcome.incompatible is not None and not outcome.ok
    assert len(session.sent) == 1 and session.executed == []
    assert is_relist_refusal(outcome.error)
    rendered = outcome.to_dict()["incompatible"]
    assert (rendered["from"], rendered["to"]) == ("3.0.0", "4.0.0")
    assert {c["path"] for c in rendered["changes"]} >= {
        "$.properties.timeout_ms", "$.properties.mode.enum"}
    assert all(c["rule"] and c["bump"] in ("major", "minor", "patch")
               for c in rendered["changes"])
    assert [(e.path, e.keyword) for e in outcome.errors] == [
        ("$.timeout", "required"), ("$.timeout_ms", "additionalProperties")]


def test_a_second_refusal_is_returned_as_it_is_never_a_loop() -> None:
    session = _session(PAYMENTS)
    kernel = Kernel(session)
    run(kernel.tools())
    session.publish(_v2_payments(), retire_previous=True)
    session.callable_versions["payments.lookup"] = set()  # every pin refused
    outcome = run(kernel.call("payments.lookup", {"reference": "PMT-771"}))
    assert session.lists == 2 and len(session.sent) == 2 and session.executed == []
    assert outcome.relisted and not outcome.ok and is_relist_refusal(outcome.error)


def test_a_refusal_without_the_relist_action_is_not_followed() -> None:
    session = _session(PAYMENTS)
    kernel = Kernel(session)
    run(kernel.tools())
    del session.tools["payments.lookup"]
    outcome = run(kernel.call("payments.lookup", {"reference": "PMT-771"}))
    assert outcome.error is not None and outcome.error["code"] == -32602
    assert not outcome.relisted and session.lists == 1


def test_side_effect_of_the_listed_annotations_is_kept_in_the_cache() -> None:
    schema = {"type": "object"}
    session = _session(descriptor("w", schema, side_effect=SideEffect.WRITE),
                       descriptor("bare", schema))
    kernel = Kernel(session)
    tools = {t.name: t.side_effect for t in run(kernel.tools())}
    assert tools == {"w": SideEffect.WRITE, "bare": SideEffect.DESTRUCTIVE}


def test_a_model_answer_that_is_not_json_stops_the_call_with_a_model_error() -> None:
    session = _session(PAYMENTS)
    model = ScriptedModel(["sure: reference PMT-771"])
    outcome = run(Kernel(session, model=model).call("payments.lookup", SEED_ARGS))
    assert session.sent == [] and outcome.model_turns == 1
    assert [(e.path, e.keyword) for e in outcome.errors] == [("$", "model")]


def test_a_list_changed_notification_heard_by_watch_drops_the_listing() -> None:
    session = _session(PAYMENTS)
    session.changes = [None]
    kernel = Kernel(session)
    run(kernel.tools())

    class Stopped(Exception):
        pass

    async def stop(delay: float) -> None:  # the stream ended: stop instead of reopening
        raise Stopped

    with pytest.raises(Stopped):
        run(kernel.watch(sleep=stop))
    run(kernel.call("payments.lookup", {"reference": "PMT-771"}))
    assert session.lists == 2


def test_arguments_that_are_not_an_object_are_never_sent_even_without_a_usable_schema() -> None:
    session = _session(descriptor("odd", {"type": "object", "minProperties": "many"}))
    outcome = run(Kernel(session).call("odd", ["x"]))
    assert session.sent == [] and [(e.path, e.keyword) for e in outcome.errors] == [("$", "type")]
    assert run(Kernel(session).call("odd", {"x": 1})).ok


def test_a_listed_schema_with_an_external_ref_is_refused_before_anything_is_sent() -> None:
    session = _session(descriptor("odd", {"$ref": "https://example.com/s.json"}))
    with pytest.raises(ClientError) as caught:
        run(Kernel(session).call("odd", {"x": 1}))
    assert session.sent == []
    assert caught.value.code == "client.schema_not_self_contained"
    assert caught.value.data == {"tool": "odd", "cause": "schema.ref_external",
                                 "path": '$["$ref"]'}


def test_arguments_that_are_not_an_object_are_never_sent_even_if_a_schema_allows_them() -> None:
    session = _session(descriptor("loose", {}))
    outcome = run(Kernel(session).call("loose", [1, 2]))
    assert session.sent == [] and [(e.path, e.keyword) for e in outcome.errors] == [("$", "type")]
