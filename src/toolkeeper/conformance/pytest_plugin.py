"""A pytest plugin (entry point ``pytest11``): the conformance transcripts in your own suite.

It does nothing until a test asks for it. A test that takes the ``mcp_conformance_case``
fixture is run once per transcript (named after it) against the endpoint the command line
names, and gets that case's :class:`~toolkeeper.conformance.CaseResult`::

    def test_mcp_conformance(mcp_conformance_case):
        assert mcp_conformance_case.outcome != "fail", mcp_conformance_case.finding

A case that did not run (an era the target does not serve, a capability it did not
advertise) is a pytest skip with the reason before the test body runs; a ``warn`` (a broken
SHOULD) is a :class:`MCPConformanceWarning`; a ``note`` (the target differs from the official
SDK where the text sets nothing) is listed in the terminal summary, with the live and
self-check counts (``live: {passed, failed, warned, noted, skipped}``, ``selfcheck: {passed,
failed}``; the recorded cases check the harness's own validators, never the target).

    pytest --mcp-conformance-url http://127.0.0.1:8000/mcp
    pytest --mcp-conformance-stdio "python -m my_server"

The whole corpus runs once per session (``mcp_conformance_report`` is that report); without a
target option those tests are skipped with the reason; a target the harness cannot reach
errors each of them with the stable code. ``--mcp-conformance-era``,
``--mcp-conformance-tool``, ``--mcp-conformance-capability-tool``, ``--mcp-conformance-token``
and ``--mcp-conformance-transcripts`` mean what ``toolkeeper conformance run``'s options mean.
"""

from __future__ import annotations

import asyncio
import shlex
import warnings
from pathlib import Path
from typing import Any, Final

import pytest

from toolkeeper.client import Target
from toolkeeper.conformance.corpus import builtin_corpus, load_directory
from toolkeeper.conformance.render import counts_text
from toolkeeper.conformance.report import CaseResult, Report
from toolkeeper.conformance.runner import run_transcripts
from toolkeeper.conformance.sessions import ERA_CHOICES, ERA_VERSION, RunOptions
from toolkeeper.conformance.transcript import Transcript
from toolkeeper.errors import ToolkeeperError
from toolkeeper.protocol.versions import Era

__all__ = ["MCPConformanceWarning", "mcp_conformance_case", "mcp_conformance_report",
           "pytest_addoption", "pytest_generate_tests", "pytest_terminal_summary"]


_NAMED: Final = {"modern": ERA_VERSION[Era.MODERN], "legacy": ERA_VERSION[Era.LEGACY]}
"""``--mcp-conformance-era modern|legacy`` -> the dated name the harness runs and reports by."""


class MCPConformanceWarning(UserWarning):
    """A conformance case whose SHOULD the target broke (outcome ``warn``)."""

_PREFIX = "--mcp-conformance-"
_REPORT = pytest.StashKey[Report]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-conformance", "MCP conformance transcripts (toolkeeper)")
    group.addoption(_PREFIX + "url", default=None, metavar="URL",
                    help="Streamable HTTP endpoint the conformance cases run against.")
    group.addoption(_PREFIX + "stdio", default=None, metavar="CMD",
                    help="Command serving MCP on stdio the conformance cases run against.")
    group.addoption(_PREFIX + "era", default="auto", choices=sorted([*ERA_CHOICES, *_NAMED]),
                    help="The era to test: auto (default), modern or legacy, or the dated "
                         "version an era is named by.")
    group.addoption(_PREFIX + "tool", default=None, metavar="NAME",
                    help="The tool the cases call (default: a read-only tool listed).")
    group.addoption(_PREFIX + "capability-tool", default=None, metavar="NAME",
                    help="A tool that refuses callers without a client capability.")
    group.addoption(_PREFIX + "token", default=None, metavar="T",
                    help="Bearer token for HTTP.")
    group.addoption(_PREFIX + "transcripts", default=None, metavar="DIR",
                    help="Run these transcripts instead of the built-in corpus.")


def _option(config: pytest.Config, name: str) -> Any:
    return config.getoption(_PREFIX + name)


def _transcripts(config: pytest.Config) -> list[Transcript]:
    directory = _option(config, "transcripts")
    return builtin_corpus() if directory is None else load_directory(Path(directory))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "mcp_conformance_case" in metafunc.fixturenames:
        names = [t.name for t in _transcripts(metafunc.config)]
        metafunc.parametrize("mcp_conformance_case", names, indirect=True, ids=names)


def _target(config: pytest.Config) -> Target | None:
    url, command = _option(config, "url"), _option(config, "stdio")
    if url is not None:
        return Target.from_url(url)
    if command is not None:
        return Target.from_stdio(shlex.split(command))
    return None


@pytest.fixture(scope="session")
def mcp_conformance_report(request: pytest.FixtureRequest) -> Report:
    """The corpus run once against the endpoint the command line names."""
    config = request.config
    target = _target(config)
    if target is None:
        pytest.skip(f"no MCP endpoint: give {_PREFIX}url or {_PREFIX}stdio")
    era = _option(config, "era")
    options = RunOptions(era=_NAMED.get(era, era), tool=_option(config, "tool"),
                         token=_option(config, "token"),
                         capability_tool=_option(config, "capability-tool"))
    try:
        report = asyncio.run(run_transcripts(target, _transcripts(config), options))
    except ToolkeeperError as exc:
        # A target the harness cannot reach is no report: each case errors with the stable
        # code, not with a traceback through the harness.
        pytest.fail(f"{exc.code}: {exc.message}", pytrace=False)
    config.stash[_REPORT] = report
    return report


@pytest.fixture
def mcp_conformance_case(request: pytest.FixtureRequest,
                         mcp_conformance_report: Report) -> CaseResult:
    """The result of the transcript this test instance is parametrized with."""
    name = request.param
    case = next(case for case in mcp_conformance_report.cases if case.name == name)
    if case.outcome == "skip":
        pytest.skip(case.finding or "not run")
    if case.outcome == "warn":
        warnings.warn(MCPConformanceWarning(f"{case.name} [{case.level}]: {case.finding}"),
                      stacklevel=1)
    return case


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    """The run's counts and every note, once, after the tests."""
    del exitstatus
    report = config.stash.get(_REPORT, None)
    if report is None:
        return
    terminalreporter.section("mcp conformance")
    terminalreporter.write_line(counts_text(report))
    for verdict in report.eras:
        terminalreporter.write_line(f"{verdict.verdict} {verdict.era}: {verdict.reason}")
    for case in report.cases:
        if case.outcome == "note":
            terminalreporter.write_line(f"note {case.name} [{case.level}]: {case.finding}")
