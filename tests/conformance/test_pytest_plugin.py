"""The pytest plugin (entry point ``pytest11``): a user's suite runs the transcripts against its
own server by asking for ``mcp_conformance_case``; without a target option those tests skip
with the reason, and a suite that does not ask collects nothing extra."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from conformance_kit import STDIO_COMMAND

import toolkeeper
from toolkeeper.conformance import builtin_corpus

_SRC = str(Path(toolkeeper.__file__).resolve().parent.parent)
USER_TEST = '''
import pytest

def test_mcp_conformance(mcp_conformance_case):
    if mcp_conformance_case.outcome == "skip":
        pytest.skip(mcp_conformance_case.finding)
    assert mcp_conformance_case.outcome == "pass", mcp_conformance_case.finding
'''


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A user's pytest run: the plugin arrives through its ``pytest11`` entry point (the
    package is installed), as it does in a user's environment, never through ``-p``."""
    env = {**os.environ, "PYTHONPATH": _SRC}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "-o", "timeout=120", "--rootdir", str(directory), str(directory), *args],
        capture_output=True, text=True, env=env, timeout=180, check=False)


def _counts(output: str) -> dict[str, int]:
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped)", output)}


def test_a_suite_that_asks_runs_one_test_per_transcript_against_its_server(tmp_path: Path
                                                                           ) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    done = _pytest(tmp_path, "--mcp-conformance-stdio", shlex.join(STDIO_COMMAND))
    assert done.returncode == 0, done.stdout[-2000:]
    assert _counts(done.stdout) == {"passed": len(builtin_corpus()) - 1, "skipped": 1}


def test_without_a_target_option_the_cases_skip_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    done = _pytest(tmp_path, "-rs")
    assert done.returncode == 0, done.stdout[-2000:]
    assert _counts(done.stdout) == {"skipped": len(builtin_corpus())}
    assert "no MCP endpoint: give --mcp-conformance-url or --mcp-conformance-stdio" \
        in done.stdout


def test_a_suite_that_does_not_ask_collects_nothing_extra(tmp_path: Path) -> None:
    (tmp_path / "test_other.py").write_text("def test_plain():\n    assert True\n")
    done = _pytest(tmp_path, "--mcp-conformance-stdio", shlex.join(STDIO_COMMAND))
    assert done.returncode == 0, done.stdout[-2000:]
    assert _counts(done.stdout) == {"passed": 1}


def test_an_unreachable_server_fails_each_case_with_the_stable_code_and_no_traceback(
        tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    done = _pytest(tmp_path, "--mcp-conformance-stdio", "/nonexistent/toolkeeper-no-server")
    assert done.returncode == 1, done.stdout[-2000:]
    assert re.search(r"(\d+) errors?", done.stdout) is not None
    assert "conformance.unreachable" in done.stdout
    assert "Traceback" not in done.stdout and "raise " not in done.stdout
    assert "toolkeeper/conformance/" not in done.stdout
