"""Issue 11: real MCP clients (Python and Node, each at a pinned version) run every operation of
the matrix against the demo gateway over Streamable HTTP and over stdio, in one session per cell,
and each op's outcome is judged against the spec. The results are ``docs/compatibility.md``:
written with ``TOOLKEEPER_WRITE_COMPAT=1``, otherwise compared row by row so it cannot drift.
``TOOLKEEPER_INTEROP=skip`` skips the matrix (a failed install never does)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from interop_kit import (
    ClientSpec,
    cache_root,
    cell_row,
    hand_written,
    judge_run,
    locked,
    parse_rows,
    parse_upstream_rows,
    render_doc,
    row_key,
    run_driver,
)
from node_clients import NODE_CLIENTS
from python_clients import PYTHON_CLIENTS

pytestmark = [
    pytest.mark.skipif(os.environ.get("TOOLKEEPER_INTEROP") == "skip",
                       reason="TOOLKEEPER_INTEROP=skip"),
    # A backstop only: the first cell waits for the session's cold installs (pip, npm); each
    # driver run is bounded by run_driver's hard timeout.
    pytest.mark.timeout(900),
]

CLIENTS: list[ClientSpec] = PYTHON_CLIENTS + NODE_CLIENTS
CELLS = [(spec, mode, transport) for spec in CLIENTS for mode in spec.modes
         for transport in spec.transports]
DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
WRITE = os.environ.get("TOOLKEEPER_WRITE_COMPAT") == "1"


def _cell_id(spec: ClientSpec, mode: str, transport: str) -> str:
    """``mcp_1.30.0-legacy-http``: only characters that ``pytest -k`` accepts."""
    name = re.sub(r"[^\w./-]+", "_", spec.name).strip("_")
    return f"{name}-{mode}-{transport}"


def _documented_rows() -> dict[tuple[str, str, str], list[str]]:
    return parse_rows(DOC.read_text()) if DOC.exists() else {}


def _write_doc(update: Callable[[dict[tuple[str, str, str], list[str]]], None]) -> None:
    with locked(cache_root() / "compatibility.md.lock"):  # cells may run in parallel processes
        rows = _documented_rows()
        update(rows)
        DOC.parent.mkdir(parents=True, exist_ok=True)
        doc = DOC.read_text() if DOC.exists() else ""
        DOC.write_text(render_doc([spec.name for spec in CLIENTS], rows,
                                  parse_upstream_rows(doc), hand_written(doc)))


@pytest.mark.parametrize(("spec", "mode", "transport"),
                         [pytest.param(*cell, id=_cell_id(*cell)) for cell in CELLS])
def test_client_gets_what_the_spec_promises_for_every_op(
        spec: ClientSpec, mode: str, transport: str, driver_prefix: Callable[[ClientSpec], list[str]],
        request: pytest.FixtureRequest) -> None:
    prefix = driver_prefix(spec)
    if transport == "http":
        target = ["--url", request.getfixturevalue("http_gateway")]
    else:
        target = ["--command", json.dumps(request.getfixturevalue("stdio_argv"))]
    output = run_driver([*prefix, "--transport", transport, *target, "--mode", mode,
                         "--ops", ",".join(spec.ops)])
    row = cell_row(spec, mode, transport, output)
    problems = judge_run(spec, mode, output)
    if WRITE:
        _write_doc(lambda rows: rows.update({row_key(row): row}))
    elif (documented := _documented_rows().get(row_key(row))) != row:
        problems["docs/compatibility.md"] = (
            f"documents {documented}, the run gives {row} (TOOLKEEPER_WRITE_COMPAT=1 rewrites it)")
    assert not problems, f"{output.get('client')} ({mode}, {transport}):\n" + "\n".join(
        f"  {op}: {why}" for op, why in problems.items())


def test_compatibility_doc_has_a_row_for_exactly_the_matrix_cells() -> None:
    cells = {(spec.name, mode, transport) for spec, mode, transport in CELLS}
    if WRITE:  # drop the rows of cells that no longer exist, refresh the intro
        def prune(rows: dict[tuple[str, str, str], list[str]]) -> None:
            for key in set(rows) - cells:
                del rows[key]

        _write_doc(prune)
    doc = DOC.read_text()
    rows = parse_rows(doc)
    assert sorted(set(rows) ^ cells) == [], "rows missing from or extra in docs/compatibility.md"
    # the upstream servers' section is tests/upstreams' to keep: kept here as it stands
    assert doc == render_doc([spec.name for spec in CLIENTS], rows, parse_upstream_rows(doc),
                             hand_written(doc)), \
        "docs/compatibility.md was edited by hand or its intro is stale (TOOLKEEPER_WRITE_COMPAT=1)"
