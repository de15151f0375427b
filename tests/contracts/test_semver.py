from __future__ import annotations

import itertools

import pytest

from toolkeeper.contracts.semver import MAX_NUMBER_DIGITS, Version
from toolkeeper.errors import SemverError

# semver.org section 11 example, in ascending precedence.
ORDERED = [
    "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
    "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "10.0.0",
]


def test_precedence_follows_semver_section_11() -> None:
    parsed = [Version.parse(v) for v in ORDERED]
    assert sorted(reversed(parsed)) == parsed
    for a, b in itertools.pairwise(parsed):
        assert a < b and not b < a


def test_numeric_parts_compare_as_numbers_not_strings() -> None:
    assert Version.parse("1.10.0") > Version.parse("1.9.0")
    assert Version.parse("1.0.0-rc.10") > Version.parse("1.0.0-rc.9")


def test_build_metadata_is_ignored_for_precedence_and_equality() -> None:
    assert Version.parse("1.0.0+a") == Version.parse("1.0.0+b")
    assert hash(Version.parse("1.0.0+a")) == hash(Version.parse("1.0.0"))
    assert str(Version.parse("1.0.0-rc.1+build.5")) == "1.0.0-rc.1+build.5"


@pytest.mark.parametrize(
    "text",
    ["1.0", "v1.0.0", "^1.0.0", ">=1.0.0", "1.0.0 - 2.0.0", "01.0.0", "1.0.0-", "1.0.0-01",
     "1.x", "", " 1.0.0", "1.0.0\n", "latest"],
)
def test_ranges_and_junk_are_refused_with_a_stable_code(text: str) -> None:
    with pytest.raises(SemverError) as info:
        Version.parse(text)
    assert info.value.code == "semver.invalid"


def test_non_string_is_refused() -> None:
    with pytest.raises(SemverError):
        Version.parse(100)


def test_bumps() -> None:
    v = Version.parse("1.2.3")
    assert (str(v.bump_major()), str(v.bump_minor()), str(v.bump_patch())) == \
        ("2.0.0", "1.3.0", "1.2.4")
    assert str(Version.parse("1.2.3-rc.1").bump_patch()) == "1.2.3"


@pytest.mark.parametrize("part", ["major", "minor", "patch", "prerelease"])
def test_a_numeric_identifier_beyond_the_digit_bound_is_refused_and_one_at_it_parses(
        part: str) -> None:
    def version(digits: str) -> str:
        triple = {"major": f"{digits}.0.0", "minor": f"1.{digits}.0", "patch": f"1.0.{digits}",
                  "prerelease": f"1.0.0-rc.{digits}"}
        return triple[part]

    at_bound = "9" * MAX_NUMBER_DIGITS
    assert str(Version.parse(version(at_bound))) == version(at_bound)
    with pytest.raises(SemverError) as info:
        Version.parse(version(at_bound + "9"))
    assert info.value.code == "semver.invalid"


def test_a_long_alphanumeric_prerelease_identifier_is_not_bounded() -> None:
    text = "1.0.0-" + "9" * MAX_NUMBER_DIGITS + "x"
    assert str(Version.parse(text)) == text
