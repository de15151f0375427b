"""The publish guard as a pure function of a name's history (SPEC 2.1), with the real classifier."""

from __future__ import annotations

from typing import Any

import pytest
from registry_kit import evolved, make_spec

from toolkeeper.contracts.classify import classify
from toolkeeper.contracts.spec import Status, ToolSpec, spec_from_mapping
from toolkeeper.errors import PublishRefusedError
from toolkeeper.registry import Registry
from toolkeeper.registry.guard import RULES, check_publish

NAME = "payments.lookup"


def history(*versions: str, status: dict[str, Status] | None = None) -> list[ToolSpec]:
    status = status or {}
    out = [evolved(NAME, x) for x in versions]
    return [s.with_lifecycle(status=status.get(str(s.version), Status.ACTIVE)) for s in out]


def refusal(past: list[ToolSpec], candidate: ToolSpec) -> PublishRefusedError:
    with pytest.raises(PublishRefusedError) as info:
        check_publish(past, candidate, classify)
    return info.value


def test_the_first_publish_of_a_name_is_not_guarded() -> None:
    decision = check_publish([], evolved(NAME, "7.3.1"), classify)
    assert decision.existing is None and decision.reference is None and decision.verdict is None


def test_an_identical_republish_returns_the_stored_record() -> None:
    past = history("1.0.0")
    assert check_publish(past, evolved(NAME, "1.0.0"), classify).existing is past[0]


def test_different_content_under_a_published_version_is_immutable() -> None:
    error = refusal(history("1.0.0", "1.1.0"),
                    evolved(NAME, "1.0.0", shape="1.1.0", title="Other"))
    assert error.code == "publish.immutable"
    assert error.data["rule"] == "publish.immutable"
    assert error.data["minimumVersion"] == "1.1.1"


def test_an_immutable_refusal_reports_what_differs_from_the_stored_copy_of_that_version() -> None:
    past = history("1.0.0", "1.1.0")
    candidate = evolved(NAME, "1.0.0", title="Other")
    error = refusal(past, candidate)
    expected = classify(past[0], candidate)
    assert error.data["against"] == "1.0.0"
    assert error.data["bump"] == expected.bump.value
    assert error.data["changes"] == [c.to_dict() for c in expected.changes] != []


def test_build_metadata_does_not_make_a_new_version() -> None:
    error = refusal(history("1.0.0"), evolved(NAME, "1.0.0+build.7"))
    assert error.code == "publish.immutable"


def test_immutability_covers_retired_versions() -> None:
    past = history("1.0.0", "2.0.0", status={"1.0.0": Status.RETIRED})
    assert refusal(past, evolved(NAME, "1.0.0", title="x")).code == "publish.immutable"


def test_a_version_not_above_the_latest_active_is_not_monotonic() -> None:
    error = refusal(history("1.0.0", "1.2.0"), evolved(NAME, "1.1.0", shape="1.2.1"))
    assert error.code == "publish.not_monotonic"
    assert error.data["against"] == "1.2.0"
    assert error.data["minimumVersion"] == "1.2.1"


@pytest.mark.parametrize(("previous", "candidate", "bump"), [
    ("1.0.0", "2.0.0", "major"),
    ("1.0.0", "2.3.4", "major"),
    ("1.0.0", "1.1.0", "minor"),
    ("1.0.0", "1.1.7", "minor"),
    ("1.0.0", "1.0.1", "patch"),
    ("1.0.0", "1.4.0", "minor"),
])
def test_a_version_that_carries_the_required_bump_passes(previous: str, candidate: str,
                                                         bump: str) -> None:
    decision = check_publish(history(previous), evolved(NAME, candidate), classify)
    assert decision.verdict is not None and decision.verdict.bump.value == bump
    assert decision.reference is not None and str(decision.reference.version) == previous


def test_a_patch_change_may_ship_as_a_minor_release() -> None:
    decision = check_publish(history("1.0.0"), evolved(NAME, "1.1.0", shape="1.0.1"), classify)
    assert decision.verdict is not None and decision.verdict.bump.value == "patch"


@pytest.mark.parametrize("candidate", ["1.2.1", "1.3.0", "2.0.0", "3.0.0", "7.1.4"])
def test_a_patch_change_may_ship_as_any_greater_version_a_new_major_included(
        candidate: str) -> None:
    """Seed 000 section 4: a PATCH-level change has no bump rule, only monotonicity (an
    operator marks a behavioural break the schema cannot show with a new major)."""
    decision = check_publish(history("1.2.0"), evolved(NAME, candidate, shape="1.2.1"),
                             classify)
    assert decision.verdict is not None and decision.verdict.bump.value == "patch"
    assert decision.existing is None and str(decision.reference.version) == "1.2.0"


def test_a_patch_change_still_needs_a_greater_version() -> None:
    error = refusal(history("1.2.0"), evolved(NAME, "1.1.9", shape="1.2.1"))
    assert error.code == "publish.not_monotonic"


@pytest.mark.parametrize(("previous", "content_of", "candidate", "rule", "minimum"), [
    # a breaking change published as a minor or patch release
    ("1.0.0", "2.0.0", "1.1.0", "publish.bump_required", "2.0.0"),
    ("1.0.0", "2.0.0", "1.0.1", "publish.bump_required", "2.0.0"),
    # a breaking change that skips a major
    ("1.0.0", "2.0.0", "3.0.0", "publish.bump_required", "2.0.0"),
    # an addition published as a patch release
    ("1.2.0", "1.3.0", "1.2.1", "publish.bump_required", "1.3.0"),
    # an addition published as a new major
    ("1.2.0", "1.3.0", "2.0.0", "publish.bump_unjustified", "1.3.0"),
])
def test_a_version_that_misstates_the_change_is_refused_with_the_smallest_passing_version(
        previous: str, content_of: str, candidate: str, rule: str, minimum: str) -> None:
    spec = evolved(NAME, candidate, shape=content_of)
    error = refusal(history(previous), spec)
    assert error.code == rule
    assert error.data["minimumVersion"] == minimum
    assert error.data["against"] == previous
    assert error.data["changes"], "a refusal lists the classifier's changes"
    assert {"rule", "path", "bump", "reason"} <= set(error.data["changes"][0])


def test_bump_is_enforced_against_the_latest_active_version_not_a_deprecated_newer_one() -> None:
    past = history("1.0.0", "2.0.0", status={"2.0.0": Status.DEPRECATED})
    decision = check_publish(past, evolved(NAME, "1.1.0"), classify)
    assert decision.reference is not None and str(decision.reference.version) == "1.0.0"


def test_with_no_active_version_the_newest_of_any_status_is_the_reference() -> None:
    past = history("1.0.0", "2.0.0", status={"1.0.0": Status.RETIRED,
                                             "2.0.0": Status.DEPRECATED})
    error = refusal(past, evolved(NAME, "1.5.0"))
    assert error.code == "publish.not_monotonic" and error.data["against"] == "2.0.0"


def test_a_pre_release_train_is_measured_against_its_base_release() -> None:
    past = history("1.2.0", "2.0.0-rc.1")
    rc2 = make_spec(NAME, "2.0.0-rc.2", required=["r0", "r1", "r2", "r9"])
    decision = check_publish(past, rc2, classify)  # breaking against rc.1 too: fine in a train
    assert decision.reference is not None and str(decision.reference.version) == "1.2.0"
    final = evolved(NAME, "2.0.0")
    assert check_publish([*past, rc2.with_lifecycle()], final, classify).existing is None


def test_a_release_of_a_minor_train_cannot_hide_a_breaking_change() -> None:
    past = history("1.2.0", "1.3.0-rc.1")
    breaking = make_spec(NAME, "1.3.0", required=["r0", "r1", "extra"], optional=["o0", "o1"],
                         description="patch level 0")
    error = refusal(past, breaking)
    assert error.code == "publish.bump_required"
    assert error.data["against"] == "1.2.0" and error.data["bump"] == "major"


def test_a_train_with_no_base_is_unguarded_like_a_first_publish() -> None:
    decision = check_publish(history("1.0.0-alpha.1"), evolved(NAME, "1.0.0"), classify)
    assert decision.reference is None


def test_each_candidate_minimum_is_judged_against_the_reference_it_would_have() -> None:
    # 2.0.0 would close the 2.0.0-rc train, judged against 1.2.0: only MINOR, so unjustified.
    # 2.1.0 is judged against the live 2.0.0-rc.1, which it breaks (r2 dropped): 3.0.0 passes.
    past = history("1.2.0", "2.0.0-rc.1")
    error = refusal(past, evolved(NAME, "2.0.0", shape="1.3.0"))
    assert error.code == "publish.bump_unjustified"
    assert error.data["against"] == "1.2.0"
    assert error.data["minimumVersion"] == "3.0.0"


def test_every_rule_id_is_documented() -> None:
    assert set(RULES) == {"publish.immutable", "publish.not_monotonic",
                          "publish.bump_required", "publish.bump_unjustified"}


# --- the 4,300-digit bound of version numbers (found in review) ------------------------------

def _big_contract(version: str, required: bool) -> Any:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    if required:
        schema["required"] = ["a"]
    return spec_from_mapping({
        "name": "t.big", "version": version, "title": "t", "description": "big (review)",
        "inputSchema": schema, "dataClassification": "public", "sideEffect": "read"})


def test_a_refused_publish_after_a_version_at_the_digit_bound_is_a_publish_refusal() -> None:
    nines = "9" * 4300
    registry = Registry.open("memory:")
    registry.publish(_big_contract(f"{nines}.0.0", required=False))
    with pytest.raises(PublishRefusedError) as caught:
        registry.publish(_big_contract(f"{nines}.1.0", required=True))  # MAJOR, needs a bump
    assert caught.value.code.startswith("publish.")
