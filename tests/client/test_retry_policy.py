"""Retries of transient failures only where RETRYABLE[side_effect] allows (SPEC 1.1, 4), and the
side effect read from annotations (conservatively for servers without toolkeeper contracts)."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from kernel_session_kit import FakeSession, descriptor

from toolkeeper.client.kernel import Kernel
from toolkeeper.client.retry import SIDE_EFFECT_BY_HINTS, RetryPolicy, side_effect_of
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import RETRYABLE, DataClassification, SideEffect, ToolSpec
from toolkeeper.errors import (
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    ServerUnavailableError,
)

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}
TRANSIENTS = [ClientConnectionError("lost"), ClientTimeoutError("slow"),
              ServerUnavailableError("503")]


async def _no_sleep(delay: float) -> None:
    return None


POLICY = RetryPolicy(attempts=3, delays=(0.5,), sleep=_no_sleep)


def _kernel(side_effect: SideEffect | None, failures: dict[int, tuple[ClientError, bool]]
            ) -> tuple[Kernel, FakeSession]:
    session = FakeSession(fail_attempts=failures)
    session.publish(descriptor("t", SCHEMA, version="1.0.0", side_effect=side_effect))
    return Kernel(session, retry=POLICY), session


@pytest.mark.parametrize("error", TRANSIENTS, ids=lambda e: e.code)
@pytest.mark.parametrize("side_effect", [SideEffect.WRITE, SideEffect.DESTRUCTIVE, None])
def test_a_non_idempotent_write_whose_answer_is_lost_runs_once_and_the_failure_surfaces(
        side_effect: SideEffect | None, error: ClientError) -> None:
    kernel, session = _kernel(side_effect, {1: (error, True)})
    with pytest.raises(type(error)):
        asyncio.run(kernel.call("t", {"n": 1}))
    assert len(session.sent) == 1 and len(session.executed) == 1


@pytest.mark.parametrize("error", TRANSIENTS, ids=lambda e: e.code)
@pytest.mark.parametrize("side_effect", [SideEffect.READ, SideEffect.IDEMPOTENT_WRITE])
def test_a_read_whose_answer_is_lost_is_retried_with_the_same_request_id(
        side_effect: SideEffect, error: ClientError) -> None:
    kernel, session = _kernel(side_effect, {1: (error, True)})
    outcome = asyncio.run(kernel.call("t", {"n": 1}))
    assert outcome.ok and outcome.attempts == 2
    assert len(session.sent) == 2 and session.sent[0].request_id is not None
    assert session.sent[0].request_id == session.sent[1].request_id
    assert session.sent[0].meta == session.sent[1].meta == {"schemaVersion": "1.0.0"}


def test_retries_stop_after_the_attempt_budget() -> None:
    failures: dict[int, tuple[ClientError, bool]] = {
        i: (ClientTimeoutError("slow"), False) for i in range(1, 10)}
    kernel, session = _kernel(SideEffect.READ, failures)
    with pytest.raises(ClientTimeoutError):
        asyncio.run(kernel.call("t", {"n": 1}))
    assert len(session.sent) == 3 and session.executed == []


def test_each_governed_call_has_its_own_request_identity() -> None:
    kernel, session = _kernel(SideEffect.READ, {})
    asyncio.run(kernel.call("t", {"n": 1}))
    asyncio.run(kernel.call("t", {"n": 2}))
    assert session.sent[0].request_id != session.sent[1].request_id


def test_the_waits_between_attempts_follow_the_policy() -> None:
    waits: list[float] = []

    async def record(delay: float) -> None:
        waits.append(delay)

    policy = RetryPolicy(attempts=4, delays=(0.1, 0.3), sleep=record)
    session = FakeSession(fail_attempts={i: (ClientConnectionError("x"), False) for i in (1, 2, 3)})
    session.publish(descriptor("t", SCHEMA, side_effect=SideEffect.READ))
    assert asyncio.run(Kernel(session, retry=policy).call("t", {})).ok
    assert waits == [0.1, 0.3, 0.3]


def test_retryable_is_read_from_the_contract_table_for_every_side_effect() -> None:
    for side_effect in SideEffect:
        assert POLICY.allows(side_effect) is RETRYABLE[side_effect]
    assert not RetryPolicy.never().allows(SideEffect.READ)


def test_toolkeeper_descriptors_give_back_the_side_effect_they_were_derived_from() -> None:
    for side_effect in SideEffect:
        spec = ToolSpec(name="t", version=Version.parse("1.0.0"), title="t", description="t",
                        input_schema={"type": "object"}, side_effect=side_effect,
                        data_classification=DataClassification.PUBLIC)
        assert side_effect_of(spec.to_mcp()) is side_effect


def test_every_hint_combination_has_a_row_and_missing_hints_are_not_retryable() -> None:
    assert set(SIDE_EFFECT_BY_HINTS) == set(itertools.product((True, False), repeat=3))
    assert side_effect_of({"name": "t"}) is SideEffect.DESTRUCTIVE
    assert side_effect_of({"name": "t", "annotations": {"readOnlyHint": "yes"}}) is (
        SideEffect.DESTRUCTIVE)
    assert side_effect_of({"name": "t", "annotations": {"destructiveHint": False}}) is (
        SideEffect.WRITE)
    assert side_effect_of({"name": "t", "annotations": {"readOnlyHint": True}}) is SideEffect.READ
