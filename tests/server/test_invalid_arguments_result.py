"""The invalid-arguments result (:func:`~toolkeeper.server.call_outcomes.invalid_arguments_result`):
each error once in ``structuredContent.errors``, a prefix of the sorted errors bounded by count
and bytes, the rest counted in ``omitted``; a text summary of fixed size; and, for a client of
an era without structured content, the summary as the whole answer."""

from __future__ import annotations

import json

from gateway_kit import Driver, contract, gateway_for

from toolkeeper.contracts.validate import Issue
from toolkeeper.registry import Registry
from toolkeeper.server.call_outcomes import (
    DEFAULT_MAX_REPORTED_ERRORS,
    collection_bound,
    invalid_arguments_result,
)


def _issues(count: int, path_chars: int = 1) -> list[Issue]:
    return sorted(Issue(f"$.{'p' * path_chars}{i:05d}", "additional property is not allowed",
                        "additionalProperties") for i in range(count))


def test_a_few_errors_are_listed_once_each_with_no_omitted_count() -> None:
    issues = _issues(3)
    result = invalid_arguments_result(issues)
    assert result.structured == {"errors": [i.to_dict() for i in issues]}
    (block,) = result.content
    assert block["text"].splitlines() == [
        "Invalid arguments (3 errors):",
        *(f"{i.path}: additional property is not allowed [additionalProperties]"
          for i in issues)]


def test_errors_beyond_the_count_bound_are_counted_not_listed() -> None:
    issues = _issues(200)
    result = invalid_arguments_result(issues)
    structured = result.structured
    assert structured["errors"] == [i.to_dict() for i in issues[:DEFAULT_MAX_REPORTED_ERRORS]]
    assert structured["omitted"] == 200 - DEFAULT_MAX_REPORTED_ERRORS
    lines = result.content[0]["text"].splitlines()
    assert lines[0] == "Invalid arguments (200 errors; 50 listed, 150 omitted):"
    assert len(lines) == 1 + 5 + 1 and lines[-1] == "... 195 more"


def test_long_paths_are_listed_only_up_to_the_byte_bound() -> None:
    issues = _issues(50, path_chars=4000)
    result = invalid_arguments_result(issues)
    listed = result.structured["errors"]
    assert 0 < len(listed) < 50
    assert listed == [i.to_dict() for i in issues[:len(listed)]]
    assert result.structured["omitted"] == 50 - len(listed)
    assert len(json.dumps(listed)) <= 32768
    assert all(len(line) < 400 for line in result.content[0]["text"].splitlines())


def test_a_first_error_larger_than_the_byte_bound_is_counted_and_summarised_shortened() -> None:
    issues = [Issue("$['" + "x" * 100_000 + "']", "additional property is not allowed",
                    "additionalProperties")]
    result = invalid_arguments_result(issues)
    assert result.structured == {"errors": [], "omitted": 1}
    text = result.content[0]["text"]
    assert text.startswith("Invalid arguments (1 error; 0 listed, 1 omitted):\n$['xxx")
    assert len(text) < 400


def test_the_bound_given_is_the_number_listed() -> None:
    result = invalid_arguments_result(_issues(10), 4)
    assert (len(result.structured["errors"]), result.structured["omitted"]) == (4, 6)


def _closed_registry() -> Registry:
    registry = Registry.open("memory:")
    registry.publish(contract("closed", "1.0.0", {"type": "object",
                                                  "additionalProperties": False}))
    return registry


def test_a_client_without_structured_content_reads_the_counts_in_the_summary() -> None:
    arguments = {f"k{i:03d}": 0 for i in range(120)}
    old = Driver(gateway_for(_closed_registry()).kernel, legacy=True,
                 legacy_version="2025-03-26")
    result = old.call("closed", arguments)["result"]
    assert result["isError"] is True and "structuredContent" not in result
    lines = result["content"][0]["text"].splitlines()
    assert lines[0] == "Invalid arguments (120 errors; 50 listed, 70 omitted):"
    assert [line.split(":")[0] for line in lines[1:6]] == [f"$.k{i:03d}" for i in range(5)]


def test_the_configured_bound_reaches_the_answer() -> None:
    driver = Driver(gateway_for(_closed_registry(), max_reported_errors=2).kernel)
    result = driver.call("closed", {"a": 0, "b": 0, "c": 0})["result"]
    assert [e["path"] for e in result["structuredContent"]["errors"]] == ["$.a", "$.b"]
    assert result["structuredContent"]["omitted"] == 1


def test_a_truncated_result_says_so_and_its_omitted_count_is_what_was_found() -> None:
    issues = _issues(200)
    result = invalid_arguments_result(issues, truncated=True)
    assert result.structured["errors"] == [i.to_dict() for i in issues[:50]]
    assert (result.structured["omitted"], result.structured["truncated"]) == (150, True)
    assert result.content[0]["text"].splitlines()[0] == (
        "Invalid arguments (200 errors in the values checked, the rest not checked; "
        "50 listed, 150 omitted):")
    few = invalid_arguments_result(_issues(3), truncated=True)
    assert few.structured == {"errors": [i.to_dict() for i in _issues(3)], "truncated": True}


def test_a_long_message_is_listed_cut_to_1024_characters() -> None:
    issue = Issue("$.tag", "must be one of [" + '"x",' * 3000 + "]", "enum")
    (listed,) = invalid_arguments_result([issue]).structured["errors"]
    assert (listed["path"], listed["keyword"]) == ("$.tag", "enum")
    assert listed["message"] == issue.message[:1021] + "..."


def test_the_values_checked_are_the_larger_of_1000_and_20_per_listed_error() -> None:
    assert [collection_bound(n) for n in (1, 50, 51, 10_000)] == [1000, 1000, 1020, 200_000]
    assert collection_bound() == 1000
