"""``toolkeeper diff BEFORE AFTER``: classify the change between two contracts or schemas (SPEC 1.4).

Each file is a contract (JSON or YAML) or a bare JSON Schema: a mapping with none of the keys
``name``, ``version``, ``inputSchema`` is a bare schema (an input schema unless ``--output``).
Two contracts are compared whole (schemas and metadata); otherwise the schemas are compared (a
contract contributes its input schema, or its output schema with ``--output``). The exit code is
0 whatever the bump (the verdict is the output); 2 on bad input.
"""

from __future__ import annotations

from typing import Any

import click

from toolkeeper.cli.documents import load_contract_or_schema
from toolkeeper.cli.output import echo_json, fail
from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.classify import classify, classify_schemas
from toolkeeper.contracts.classify.rules import RULES
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import ToolkeeperError

__all__ = ["diff_documents", "register"]

def _schema_of(side: ToolSpec | dict[str, Any], output: bool, label: str) -> dict[str, Any]:
    if isinstance(side, dict):
        return side
    schema = side.output_schema if output else side.input_schema
    if schema is None:
        raise ToolkeeperError(f"{label}: the contract has no outputSchema",
                              code="diff.no_output_schema", path="$.outputSchema")
    return schema


def diff_documents(before_path: str, after_path: str, *, output: bool = False) -> Verdict:
    """The verdict for two files; raises ToolkeeperError on bad input."""
    before, after = load_contract_or_schema(before_path), load_contract_or_schema(after_path)
    if isinstance(before, ToolSpec) and isinstance(after, ToolSpec) and not output:
        return classify(before, after)
    contracts = [side for side in (before, after) if isinstance(side, ToolSpec)]
    return classify_schemas(_schema_of(before, output, before_path),
                            _schema_of(after, output, after_path), output=output,
                            assert_formats=any(c.assert_formats for c in contracts))


def _render(verdict: Verdict) -> None:
    rows = [(c.bump.value.upper(), c.rule, c.path, c.reason) for c in verdict.changes]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(3)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)]
        click.echo("  ".join([*cells, row[3]]))
    counts = {bump: sum(c.bump is bump for c in verdict.changes) for bump in Bump}
    review = sum(RULES[c.rule].review for c in verdict.changes)
    if not verdict.changes:
        click.echo("PATCH: no changes")
        return
    parts = ", ".join(f"{counts[b]} {b.value}" for b in (Bump.MAJOR, Bump.MINOR, Bump.PATCH)
                      if counts[b])
    flagged = f"; {review} flagged for review" if review else ""
    noun = "change" if len(verdict.changes) == 1 else "changes"
    click.echo(f"{verdict.bump.value.upper()}: {len(verdict.changes)} {noun} ({parts}){flagged}")


@click.command("diff")
@click.argument("before")
@click.argument("after")
@click.option("--output", "output", is_flag=True,
              help="Compare output schemas (covariant): bare schemas are output schemas and "
                   "contracts contribute their outputSchema.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def diff_cmd(before: str, after: str, output: bool, as_json: bool) -> None:
    """Classify the change from BEFORE to AFTER (contracts or bare JSON Schemas; '-' is stdin)
    as MAJOR, MINOR or PATCH and list every change with its rule, path and reason.

    Exit 0 with a verdict (whatever the bump), 2 on bad input.
    """
    try:
        verdict = diff_documents(before, after, output=output)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    if as_json:
        echo_json(verdict.to_dict())
    else:
        _render(verdict)


def register(group: click.Group) -> None:
    """Add ``diff`` to the CLI group."""
    group.add_command(diff_cmd)
