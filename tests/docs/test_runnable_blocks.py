"""Every runnable block of README.md and docs/ runs as the page says (``docs_kit`` states the
convention): its exit status and the key lines of its standard output are checked, against a
gateway the page itself starts, in a fresh directory holding a copy of examples/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_kit import ROOT, SHELLS, Block, PageRun, blocks_of, doc_pages

RUNNABLE = [block for page in doc_pages() for block in blocks_of(page) if block.runnable]


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, PageRun]]:
    """One run per page, made when its first block is asked for; each page's background
    processes are stopped by pid at the end of the module."""
    made: dict[str, PageRun] = {}
    yield made
    for run in made.values():
        run.close()


def _run_for(runs: dict[str, PageRun], block: Block, scratch_root: Path) -> PageRun:
    if block.page not in runs:
        home = scratch_root / block.page.replace("/", "__")
        home.mkdir(parents=True)
        runs[block.page] = PageRun(ROOT / block.page, home)
    return runs[block.page]


@pytest.fixture(scope="module")
def scratch_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pages")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.case_id for block in RUNNABLE])
def test_the_block_exits_as_marked_and_prints_what_the_page_expects(
        block: Block, runs: dict[str, PageRun], scratch_root: Path) -> None:
    run = _run_for(runs, block, scratch_root)
    outcome = run.outcome(run.blocks.index(block))
    assert outcome.problem is None, (
        f"{block.page} line {block.line}: {outcome.problem}\n$ {run.command(block)}"
        f"--- stdout\n{outcome.stdout}--- stderr\n{outcome.stderr[-4000:]}")
    if block is run.blocks[-1]:
        codes = run.close()
        assert all(code == 0 for code in codes), f"a background process exited {codes}"


SET_UP = ("python3 -m venv .venv && . .venv/bin/activate && pip install -q -e . && "
          "toolkeeper serve --demo\n",
          "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[dev]' && "
          "python -m pytest\n")
"""The README's two set-up commands: they install this checkout, so they run in CI itself
(.ci/run holds the second verbatim), not in a page's scratch directory."""


WHEEL = ("python -m pip install build\n"
         "python -m build --wheel --outdir dist .\n"
         "python -m venv /tmp/tk && /tmp/tk/bin/pip install dist/toolkeeper-*.whl\n"
         "/tmp/tk/bin/toolkeeper serve --demo\n")
"""docs/operations.md's wheel steps: they build this checkout, so tests/test_wheel.py runs them
(build, a fresh virtual environment, ``serve --demo`` answering the seed's call)."""


def test_every_shell_block_is_runnable_but_the_set_up_and_wheel_commands() -> None:
    """A command shown in a shell block is run by this file; a synopsis is a ``text`` block."""
    unmarked = [block for page in doc_pages() for block in blocks_of(page)
                if block.language in SHELLS and not block.runnable]
    assert [(block.page, block.code) for block in unmarked] == [
        ("README.md", SET_UP[0]), ("README.md", SET_UP[1]), ("docs/operations.md", WHEEL)]
    assert (ROOT / "tests" / "test_wheel.py").is_file()
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert all(block.line < 40 for block in unmarked if block.page == "README.md"), (
        "the set-up is on the first screen")
    assert readme[0] == "# toolkeeper"
    assert SET_UP[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_tour_starts_a_gateway_and_checks_its_output() -> None:
    tour = [block for block in RUNNABLE if block.page == "README.md"]
    assert [block.background for block in tour].count(True) == 1
    assert sum(len(block.expect) for block in tour) >= 5
    assert {block.exit_code for block in tour} >= {0, 1}


def test_the_marks_are_read_as_the_convention_writes_them(tmp_path: Path) -> None:
    """A comment right before the fence, ``exit=N`` and ``background`` included, and
    expectations right after the closing fence; an unmarked block is not run."""
    page = tmp_path / "marks.md"
    page.write_text("text\n\n<!-- runnable exit=3 -->\n```bash\nfalse\n```\n"
                    "<!-- expect: one -->\n<!-- expect: two -->\n\n"
                    "<!-- runnable background -->\n```bash\ntoolkeeper serve\n```\n\n"
                    "```bash\nls\n```\n")
    blocks = blocks_of(page)
    assert [(b.runnable, b.exit_code, b.background, b.expect) for b in blocks] == [
        (True, 3, False, ("one", "two")), (True, 0, True, ()), (False, 0, False, ())]


def test_the_harness_substitutes_the_port_stops_the_gateway_and_catches_a_missing_line(
        tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- runnable background -->\n```bash\ntoolkeeper serve --demo "
                    "--registry memory:\n```\n\n<!-- runnable -->\n```bash\n"
                    "toolkeeper tools http://127.0.0.1:8000/mcp\n```\n"
                    "<!-- expect: payments.lookup -->\n<!-- expect: no such tool -->\n")
    home = tmp_path / "home"
    home.mkdir()
    run = PageRun(page, home)
    assert run.command(run.blocks[0]) == (
        f"toolkeeper serve --port {run.port} --demo --registry memory:\n")
    assert run.command(run.blocks[1]) == f"toolkeeper tools http://127.0.0.1:{run.port}/mcp\n"
    outcome = run.outcome(1)
    assert "payments.lookup" in outcome.stdout
    assert outcome.problem == "standard output lacks 'no such tool'"
    (proc, _), = run.background
    assert run.close() == [0] and proc.returncode == 0
