"""The SDK diff policy file: canonical JSON, every role judging every kind of change; the shipped
one accepts semantic loss for an application endpoint and refuses it for an intermediary, and a
file that is not canonical or leaves a kind unjudged is refused with its code and path."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.conformance import SDK_DIFF_FIXTURES, canonical_text, load_policy, sdk_fixtures
from toolkeeper.conformance.sdk_changes import KINDS, Change
from toolkeeper.errors import ConformanceError


def _shipped() -> dict[str, Any]:
    text = resources.files("toolkeeper.conformance").joinpath("sdk_diff_policy.json").read_text()
    value: dict[str, Any] = json.loads(text)
    assert canonical_text(value) == text
    return value


def test_the_shipped_policy_judges_every_kind_for_every_role() -> None:
    policy = load_policy()
    assert policy.accounted == {"_meta", "cacheScope", "resultType", "ttlMs"}
    assert set(_shipped()["kinds"]) == set(KINDS)
    for role in ("application", "intermediary"):
        assert set(policy.roles[role]) == set(KINDS)


def test_semantic_loss_is_acceptable_for_an_application_and_refused_for_an_intermediary() -> None:
    policy = load_policy()
    loss = [Change("semantic_loss", "$.futureHint"), Change("accounted_removal", "$.resultType")]
    assert policy.refused("application", loss) == ()
    assert policy.refused("intermediary", loss) == ("semantic_loss",)


def test_a_policy_that_is_not_canonical_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(_shipped()))
    with pytest.raises(ConformanceError) as caught:
        load_policy(path)
    assert (caught.value.code, caught.value.data["path"]) == ("conformance.bad_policy", "$")


def test_a_policy_leaving_a_kind_unjudged_is_refused_at_its_path(tmp_path: Path) -> None:
    value = _shipped()
    del value["roles"]["intermediary"]["semantic_loss"]
    path = tmp_path / "policy.json"
    path.write_text(canonical_text(value))
    with pytest.raises(ConformanceError) as caught:
        load_policy(path)
    assert caught.value.code == "conformance.bad_policy"
    assert caught.value.data["path"] == "$.roles.intermediary.semantic_loss"


def test_the_policy_fixtures_and_drivers_are_declared_package_data() -> None:
    root = Path(__file__).resolve().parents[2]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["toolkeeper"]
    package = resources.files("toolkeeper.conformance")
    shipped = ["sdk_diff_policy.json", "sdk_drivers/sdk_driver.py", "sdk_drivers/sdk_driver.mjs",
               *(f"sdk_fixtures/{e.name}" for e in package.joinpath("sdk_fixtures").iterdir())]
    for name in shipped:
        assert package.joinpath(name).is_file(), name
        assert any(Path(f"conformance/{name}").match(p) for p in declared), name


def test_every_sdk_diff_fixture_is_a_recorded_transcript_with_an_answer() -> None:
    fixtures = sdk_fixtures()
    assert [f.name for f in fixtures] == list(SDK_DIFF_FIXTURES)
    assert all(f.mode == "recorded" and f.response is not None for f in fixtures)
