"""``toolkeeper gate matrix RUNS... [--markdown FILE] [--json] [--decision FILE]
[--client NAME@VERSION] [--server NAME@VERSION] [--transport T]`` (docs/compatibility.md): the
compatibility matrix of run records and ``conformance run --json`` reports
(:mod:`toolkeeper.gate.matrix`), each cell's tier under the official SDK tiering, and the release
decision beside it.

``--client``, ``--server`` and ``--transport`` say what a report does not (its client is the
harness: this toolkeeper's version) or override what it says; a run record names its own.
Exit codes: 0 when every cell reads tier 1 or 2, 1 when a cell reads tier 3 or is unrated (no
required live case ran), 2 bad input (``gate.matrix_run_invalid`` with the file and each
error's path, ``gate.matrix_duplicate_cell``, ``gate.matrix_decision_invalid``,
``cli.bad_output`` when the Markdown file cannot be written).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import click

from toolkeeper.cli.documents import read_document
from toolkeeper.cli.output import EXIT_OK, EXIT_REFUSED, echo_json, fail
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.matrix import TRANSPORTS, Defaults, Party, build_matrix, meets_tier_2
from toolkeeper.gate.matrix_markdown import matrix_markdown, pass_percent, tier_label

__all__ = ["matrix_cmd", "register"]


def _party(value: str | None, option: str) -> Party | None:
    """``NAME@VERSION`` (or a bare NAME: no version); a scoped npm name keeps its leading @."""
    if value is None:
        return None
    name, at, version = value.rpartition("@")
    if not at or not name:
        name, version = value, ""
    if not name.strip():
        raise ToolkeeperError(f"{option}: give NAME@VERSION", code="cli.bad_option",
                              data={"option": option})
    return Party(name, version or None)


def _run(path: str) -> tuple[str, Any]:
    try:
        return path, read_document(path)
    except ToolkeeperError as exc:
        error = {"path": exc.path or "$", "keyword": exc.code, "message": exc.message}
        raise ToolkeeperError(f"{path}: cannot be read as JSON: {exc.message}",
                              code="gate.matrix_run_invalid",
                              data={"file": path, "errors": [error]}) from None


@click.command("matrix")
@click.argument("runs", nargs=-1, required=True, metavar="RUNS...")
@click.option("--markdown", "markdown_path", default=None, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Write the matrix as Markdown here.")
@click.option("--json", "as_json", is_flag=True, help="Print the matrix (or error) as JSON.")
@click.option("--decision", "decision_path", default=None, metavar="FILE",
              help="The release decision to place beside the matrix (an object with outcome).")
@click.option("--client", "client", default=None, metavar="NAME@VERSION",
              help="A report's client (default: toolkeeper, this version: the harness).")
@click.option("--server", "server", default=None, metavar="NAME@VERSION",
              help="A report's server (default: read from its target).")
@click.option("--transport", type=click.Choice(TRANSPORTS), default=None,
              help="A report's transport (default: read from its target).")
def matrix_cmd(runs: tuple[str, ...], markdown_path: Path | None, as_json: bool,
               decision_path: str | None, client: str | None, server: str | None,
               transport: str | None) -> None:
    """The compatibility matrix of RUNS: 0 every cell tier 1 or 2, 1 otherwise, 2 bad input."""
    try:
        harness = Party("toolkeeper", metadata.version("toolkeeper"))
        defaults = Defaults(_party(client, "--client") or harness, _party(server, "--server"),
                            transport)
        decision = None if decision_path is None else read_document(decision_path)
        matrix = build_matrix([_run(path) for path in runs], defaults, decision)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    if markdown_path is not None:
        try:
            markdown_path.write_text(matrix_markdown(matrix), encoding="utf-8")
        except OSError as exc:
            fail(ToolkeeperError(f"--markdown: cannot write the file ({type(exc).__name__})",
                                 code="cli.bad_output", data={"option": "--markdown"}),
                 as_json=as_json)
    if as_json:
        echo_json(matrix)
    else:
        _table(matrix)
    raise SystemExit(EXIT_OK if meets_tier_2(matrix) else EXIT_REFUSED)


def _table(matrix: dict[str, Any]) -> None:
    for cell in matrix["cells"]:
        required = cell["required"]
        share = pass_percent(required["passed"], required["total"]) if required["total"] \
            else "none ran"
        click.echo(f"{cell['specRevision']}  {_shown(cell['client'])} -> "
                   f"{_shown(cell['server'])} ({cell['transport']}): {tier_label(cell['tier'])}, "
                   f"required {required['passed']}/{required['total']} ({share}), "
                   f"live {cell['live']['passed']} passed {cell['live']['failed']} failed, "
                   f"{len(cell['expectedFailures'])} expected failures")
    summary = matrix["summary"]
    click.echo(f"matrix: {summary['cells']} cells, tier 1: {summary['tier1']}, tier 2: "
               f"{summary['tier2']}, tier 3: {summary['tier3']}, unrated: {summary['unrated']}")
    if matrix["decision"] is not None:
        click.echo(f"release decision: {matrix['decision']['outcome']}")


def _shown(party: dict[str, Any]) -> str:
    return party["name"] if party["version"] is None else f"{party['name']} {party['version']}"


def register(group: click.Group) -> None:
    """Add ``matrix`` to the ``gate`` group."""
    group.add_command(matrix_cmd)
