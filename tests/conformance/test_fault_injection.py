"""Faults injected between a correct server (toolkeeper's demo gateway) and the harness, by
an intermediary in process (issue 16, acceptance 4): each is caught by named cases that pass
without the fault, with the finding code that names it."""

from __future__ import annotations

import pytest
from conformance_kit import demo_app, expected_skips, outcomes, run
from fault_kit import FAULTS, faulty

from toolkeeper.client import Target

CAUGHT_BY = {
    "status-400-to-500": ("negative-header-body-mismatch", "response.status"),
    "notification-answered": ("golden-modern-extension-notification", "notification.answered"),
    "id-type-changed": ("golden-modern-tools-list", "response.id"),
    "result-type-dropped": ("golden-modern-server-discover", "response.result_type"),
    "result-type-invented": ("golden-modern-tools-list", "response.result_type"),
    "result-and-error": ("golden-modern-tools-list", "response.result_error"),
}


@pytest.fixture(scope="module")
def clean() -> dict[str, str]:
    return outcomes(run(Target.from_asgi(demo_app())))


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_caught_by_a_case_that_passes_without_it(fault: str,
                                                                clean: dict[str, str]) -> None:
    report = run(Target.from_asgi(faulty(demo_app(), FAULTS[fault])))
    name, code = CAUGHT_BY[fault]
    assert clean[name] == "pass"
    case = next(c for c in report.cases if c.name == name)
    assert case.outcome == "fail"
    assert case.finding is not None and case.finding.split(":")[0] == code
    assert report.failed >= 1


def test_the_intermediary_without_a_fault_changes_no_outcome(clean: dict[str, str]) -> None:
    report = run(Target.from_asgi(faulty(demo_app(), lambda status, body: (status, body))))
    assert outcomes(report) == clean
    assert {name for name, outcome in clean.items() if outcome != "pass"} == set(
        expected_skips(stdio=False))
