"""The call log's arguments digest (SPEC 3.4.4, 5.6): computed over the redacted arguments,
so a secret (under a denied key, or shaped like one inside a string) never changes it, while
an ordinary value does."""

from __future__ import annotations

import pytest

from redaction_kit import CORPUS, Case
from toolkeeper.server.calllog import arguments_digest


@pytest.mark.parametrize("case", [c for c in CORPUS if c.kind == "key"], ids=lambda c: c.name)
def test_a_secret_under_a_denied_key_does_not_change_the_digest(case: Case) -> None:
    assert arguments_digest(case.arguments(0)) == arguments_digest(case.arguments(1))


@pytest.mark.parametrize("case", [c for c in CORPUS if c.kind == "value"], ids=lambda c: c.name)
def test_a_secret_shaped_value_inside_a_string_does_not_change_the_digest(case: Case) -> None:
    assert arguments_digest(case.arguments(0)) == arguments_digest(case.arguments(1))


def test_an_ordinary_value_changes_the_digest() -> None:
    assert arguments_digest({"reference": "PMT-771"}) != arguments_digest({"reference": "PMT-772"})
