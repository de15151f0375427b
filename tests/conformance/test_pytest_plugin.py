"""The pytest plugin (entry point ``pytest11``): a user's suite runs the transcripts against its
own server by asking for ``mcp_conformance_case``; without a target option those tests skip
with the reason, and a suite that does not ask collects nothing extra."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from conformance_kit import STDIO_COMMAND, expected_skips

import toolkeeper
from toolkeeper.conformance import builtin_corpus, canonical_text
from toolkeeper.protocol.versions import Era

CORPUS = resources.files("toolkeeper.conformance").joinpath("transcripts")

_SRC = str(Path(toolkeeper.__file__).resolve().parent.parent)
USER_TEST = '''
import pytest

def test_mcp_conformance(mcp_conformance_case):
    assert mcp_conformance_case.outcome != "fail", mcp_conformance_case.finding
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
    """pytest's own counts (its last line; the plugin's summary above it has counts too)."""
    last = output.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped)", last)}


def test_a_suite_that_asks_runs_one_test_per_transcript_against_its_server(tmp_path: Path
                                                                           ) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    done = _pytest(tmp_path, "--mcp-conformance-stdio", shlex.join(STDIO_COMMAND))
    assert done.returncode == 0, done.stdout[-2000:]
    skipped = len(expected_skips(stdio=True))
    assert _counts(done.stdout) == {"passed": len(builtin_corpus()) - skipped,
                                    "skipped": skipped}
    live = sum(1 for t in builtin_corpus() if t.mode == "live")
    recorded = len(builtin_corpus()) - live
    assert f"live: {live - skipped} passed, 0 failed, 0 warned, 0 noted, {skipped} skipped; " \
        f"selfcheck: {recorded} passed, 0 failed" in done.stdout


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


def _variant(name: str, new: str, **changes: Any) -> tuple[str, str]:
    source = json.loads(CORPUS.joinpath(f"{name}.json").read_text("utf-8"))
    source.update(name=new, **changes)
    return new, canonical_text(source)


def test_a_warn_is_a_pytest_warning_a_note_is_summarised_and_a_skip_is_a_pytest_skip(
        tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    wrong_code = {"boundary": "tool", "code": -32099, "outcome": "rejected"}
    for new, text in (
            _variant("negative-unknown-tool", "negative-should-broken", level="SHOULD",
                     levels={}, expect=wrong_code),
            _variant("negative-unknown-tool", "negative-reference-differs", level="reference",
                     levels={}, expect=wrong_code),
            _variant("golden-modern-server-discover", "golden-needs-completions",
                     requires=["completions.unadvertisedByTheGateway"])):
        (cases / f"{new}.json").write_text(text, encoding="utf-8")
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    done = _pytest(tmp_path, "-rs", "--mcp-conformance-stdio", shlex.join(STDIO_COMMAND),
                   "--mcp-conformance-transcripts", str(cases))
    assert done.returncode == 0, done.stdout[-3000:]
    assert _counts(done.stdout) == {"passed": 2, "skipped": 1}
    assert "MCPConformanceWarning: negative-should-broken [SHOULD]: expect.code" in done.stdout
    assert "note negative-reference-differs [reference]: expect.code" in done.stdout
    assert "needs a capability the target did not advertise (one of " \
        "completions.unadvertisedByTheGateway)" in done.stdout
    assert "live: 0 passed, 0 failed, 1 warned, 1 noted, 1 skipped; selfcheck: 0 passed, " \
        "0 failed" in done.stdout


def test_the_era_option_takes_the_era_names_the_commands_take(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    done = _pytest(tmp_path, "--mcp-conformance-stdio", shlex.join(STDIO_COMMAND),
                   "--mcp-conformance-era", "legacy")
    assert done.returncode == 0, done.stdout[-2000:]
    legacy = [t for t in builtin_corpus() if t.mode == "live" and t.era is Era.LEGACY]
    skipped = [t for t in legacy if t.name in expected_skips(stdio=True)]
    assert f"live: {len(legacy) - len(skipped)} passed, 0 failed" in done.stdout
