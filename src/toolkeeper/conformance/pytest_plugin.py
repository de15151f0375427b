"""A pytest plugin (entry point ``pytest11``): the conformance transcripts in your own suite.

It does nothing until a test asks for it. A test that takes the ``mcp_conformance_case``
fixture is run once per transcript (named after it) against the endpoint the command line
names, and gets that case's :class:`~toolkeeper.conformance.CaseResult`::

    def test_mcp_conformance(mcp_conformance_case):
        assert mcp_conformance_case.outcome != "fail", mcp_conformance_case.finding

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
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.client import Target
from toolkeeper.conformance.corpus import builtin_corpus, load_directory
from toolkeeper.conformance.report import CaseResult, Report
from toolkeeper.conformance.runner import run_transcripts
from toolkeeper.conformance.sessions import ERA_CHOICES, RunOptions
from toolkeeper.conformance.transcript import Transcript
from toolkeeper.errors import ToolkeeperError

__all__ = ["mcp_conformance_case", "mcp_conformance_report", "pytest_addoption",
           "pytest_generate_tests"]

_PREFIX = "--mcp-conformance-"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-conformance", "MCP conformance transcripts (toolkeeper)")
    group.addoption(_PREFIX + "url", default=None, metavar="URL",
                    help="Streamable HTTP endpoint the conformance cases run against.")
    group.addoption(_PREFIX + "stdio", default=None, metavar="CMD",
                    help="Command serving MCP on stdio the conformance cases run against.")
    group.addoption(_PREFIX + "era", default="auto", choices=sorted(ERA_CHOICES),
                    help="The era to test (default auto).")
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
    options = RunOptions(era=_option(config, "era"), tool=_option(config, "tool"),
                         token=_option(config, "token"),
                         capability_tool=_option(config, "capability-tool"))
    try:
        return asyncio.run(run_transcripts(target, _transcripts(config), options))
    except ToolkeeperError as exc:
        # A target the harness cannot reach is no report: each case errors with the stable
        # code, not with a traceback through the harness.
        pytest.fail(f"{exc.code}: {exc.message}", pytrace=False)


@pytest.fixture
def mcp_conformance_case(request: pytest.FixtureRequest,
                         mcp_conformance_report: Report) -> CaseResult:
    """The result of the transcript this test instance is parametrized with."""
    name = request.param
    return next(case for case in mcp_conformance_report.cases if case.name == name)
