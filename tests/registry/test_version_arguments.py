"""The registry's lifecycle and read calls take a version as a ``Version`` or a semver string;
a string that is not semver is a ``SemverError``, and anything else a ``TypeError`` (never a
misleading "not published")."""

from __future__ import annotations

from typing import Any

import pytest
from registry_kit import evolved, v

from toolkeeper.contracts.spec import Status
from toolkeeper.errors import NotFoundError, SemverError
from toolkeeper.registry import Registry

NAME = "payments.lookup"


@pytest.fixture
def estate() -> Registry:
    registry = Registry.open("memory:")
    registry.publish(evolved(NAME, "1.0.0"))
    registry.publish(evolved(NAME, "1.1.0"))
    return registry


def test_deprecate_takes_version_and_successor_as_strings(estate: Registry) -> None:
    updated = estate.deprecate(NAME, "1.0.0", message="move", successor="1.1.0")
    assert (updated.status, updated.successor) == (Status.DEPRECATED, v("1.1.0"))


def test_retire_takes_a_string(estate: Registry) -> None:
    assert estate.retire(NAME, "1.0.0").status is Status.RETIRED
    assert estate.resolve(NAME, "1.0.0") is None


def test_get_and_resolve_take_a_string(estate: Registry) -> None:
    assert estate.get(NAME, "1.1.0") == estate.get(NAME, v("1.1.0")) is not None
    assert estate.resolve(NAME, "1.1.0") == estate.resolve(NAME, v("1.1.0")) is not None


def test_a_string_that_is_not_semver_is_a_semver_error(estate: Registry) -> None:
    for call in (lambda: estate.retire(NAME, "v1"), lambda: estate.get(NAME, "1.0"),
                 lambda: estate.deprecate(NAME, "1.0.0", successor="next")):
        with pytest.raises(SemverError):
            call()


@pytest.mark.parametrize("value", [1, 1.0, None, b"1.0.0", ("1", "0", "0")])
def test_a_version_of_another_type_is_a_type_error(estate: Registry, value: Any) -> None:
    with pytest.raises(TypeError):
        estate.retire(NAME, value)
    with pytest.raises(TypeError):
        estate.deprecate(NAME, value)


def test_an_unpublished_version_string_is_still_not_found(estate: Registry) -> None:
    with pytest.raises(NotFoundError):
        estate.retire(NAME, "9.9.9")
