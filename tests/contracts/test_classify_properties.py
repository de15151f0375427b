"""Property-based soundness tests of the change classifier (SPEC 1.4) on the generated schema
family of tests/contracts/test_classify_family.py (read its docstring for the family, the
instances and the caller model).

Soundness: when the classifier says MINOR or PATCH for an input pair, every instance valid under
*before* validates under *after*; for an output pair, every instance valid under *after*
validates under *before*. Pairs come from random edits anywhere in a generated document
(definitions included); per-edit tests check each edit on its own, loosening ones never MAJOR,
tightening ones always MAJOR, and every non-MAJOR verdict sound both ways.

The settings are derandomized (the same examples every run, so CI is deterministic); a failure
prints the falsifying example. ``pytest --hypothesis-show-statistics`` shows how often a
property had teeth (a non-MAJOR verdict with valid instances to check).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_classify_family import (
    LOOSEN,
    NEUTRAL,
    SETTINGS,
    TIGHTEN,
    Schema,
    documents,
    edited,
    seeded_pairs,
    valid,
    valid_instances,
)

from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.classify import classify_schemas

PER_EDIT = settings(SETTINGS, max_examples=8)
PAIR_SETTINGS = settings(SETTINGS, max_examples=100)


def _checked(kind: str, verdict: Verdict, candidates: list[Any]) -> list[Any]:
    """Count (pytest --hypothesis-show-statistics) how often the property has teeth."""
    event(f"{kind}: non-major verdict, valid instances checked: {min(len(candidates), 3)}+")
    return candidates


@SETTINGS
@given(data=st.data(), before=documents())
def test_minor_or_patch_input_verdicts_keep_every_valid_argument_valid(data: st.DataObject,
                                                                       before: Schema) -> None:
    groups = (LOOSEN, NEUTRAL, *((TIGHTEN,) if data.draw(st.integers(0, 3)) == 0 else ()))
    after = data.draw(edited(before, groups, data.draw(st.integers(1, 3))))
    verdict = classify_schemas(before, after)
    event(f"input verdict: {verdict.bump.value}")
    if verdict.bump is not Bump.MAJOR:
        for instance in _checked("input", verdict, valid_instances(data, before)):
            assert valid(after, instance), (verdict, instance)


@SETTINGS
@given(data=st.data(), before=documents())
def test_minor_or_patch_output_verdicts_promise_nothing_new(data: st.DataObject,
                                                            before: Schema) -> None:
    groups = (TIGHTEN, NEUTRAL, *((LOOSEN,) if data.draw(st.integers(0, 3)) == 0 else ()))
    after = data.draw(edited(before, groups, data.draw(st.integers(1, 3))))
    verdict = classify_schemas(before, after, output=True)
    event(f"output verdict: {verdict.bump.value}")
    if verdict.bump is not Bump.MAJOR:
        for result in _checked("output", verdict, valid_instances(data, after)):
            assert valid(before, result), (verdict, result)


@PAIR_SETTINGS
@given(data=st.data(), before=documents())
def test_several_loosening_edits_together_are_never_major(data: st.DataObject,
                                                           before: Schema) -> None:
    after = data.draw(edited(before, (LOOSEN,), data.draw(st.integers(2, 4)), positive=True))
    verdict = classify_schemas(before, after)
    assert verdict.bump is not Bump.MAJOR, verdict
    for instance in valid_instances(data, before):
        assert valid(after, instance), (verdict, instance)


@pytest.mark.parametrize("name", sorted(LOOSEN))
@PER_EDIT
@given(data=st.data())
def test_each_loosening_edit_is_never_major_and_each_verdict_is_sound(
        name: str, data: st.DataObject) -> None:
    before, after = data.draw(seeded_pairs(LOOSEN, name))
    verdict = classify_schemas(before, after)
    output = classify_schemas(before, after, output=True)
    for instance in valid_instances(data, before):
        assert valid(after, instance), (verdict, instance)
    if output.bump is not Bump.MAJOR:
        for result in valid_instances(data, after):
            assert valid(before, result), (output, result)
    assert verdict.bump is not Bump.MAJOR, verdict


@pytest.mark.parametrize("name", sorted(TIGHTEN))
@PER_EDIT
@given(data=st.data())
def test_each_tightening_edit_is_major_and_each_output_verdict_is_sound(
        name: str, data: st.DataObject) -> None:
    before, after = data.draw(seeded_pairs(TIGHTEN, name))
    verdict = classify_schemas(before, after)
    output = classify_schemas(before, after, output=True)
    if verdict.bump is not Bump.MAJOR:  # soundness first: show the argument that breaks
        for instance in valid_instances(data, before):
            assert valid(after, instance), (verdict, instance)
    if output.bump is not Bump.MAJOR:
        for result in valid_instances(data, after):
            assert valid(before, result), (output, result)
    assert verdict.bump is Bump.MAJOR, verdict


@pytest.mark.parametrize("name", sorted(NEUTRAL))
@settings(PER_EDIT, max_examples=20)  # the edits the classifier can get wrong either way
@given(data=st.data())
def test_each_neutral_edit_gets_a_sound_verdict_both_ways(name: str, data: st.DataObject) -> None:
    before, after = data.draw(seeded_pairs(NEUTRAL, name))
    verdict = classify_schemas(before, after)
    output = classify_schemas(before, after, output=True)
    if verdict.bump is not Bump.MAJOR:
        for instance in valid_instances(data, before):
            assert valid(after, instance), (verdict, instance)
    if output.bump is not Bump.MAJOR:
        for result in valid_instances(data, after):
            assert valid(before, result), (output, result)


@PAIR_SETTINGS
@given(doc=documents())
def test_a_document_compared_with_a_copy_of_itself_is_patch_with_no_changes(doc: Schema) -> None:
    for output in (False, True):
        verdict = classify_schemas(doc, copy.deepcopy(doc), output=output)
        assert verdict.bump is Bump.PATCH
        assert verdict.changes == ()


@settings(SETTINGS, max_examples=40)
@given(before=documents(), after=documents())
def test_any_pair_gets_a_sorted_deterministic_verdict_whose_bump_is_the_largest(
        before: Schema, after: Schema) -> None:
    verdict = classify_schemas(before, after)
    assert verdict == classify_schemas(copy.deepcopy(before), copy.deepcopy(after))
    keys = [(c.path, c.rule) for c in verdict.changes]
    assert keys == sorted(keys)
    largest = max((c.bump for c in verdict.changes), key=lambda b: b.rank, default=Bump.PATCH)
    assert verdict.bump is largest
