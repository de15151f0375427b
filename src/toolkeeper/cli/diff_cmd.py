"""``toolkeeper contracts diff BEFORE AFTER`` (alias ``toolkeeper diff``): classify the change
between two contracts or schemas (SPEC 1.4).

Each file is a contract (JSON or YAML) or a bare JSON Schema: a mapping with none of the keys
``name``, ``version``, ``inputSchema`` is a bare schema (an input schema unless ``--output``).
Two contracts are compared whole (schemas and metadata); otherwise the schemas are compared (a
contract contributes its input schema, or its output schema with ``--output``).

A side that is no file and reads ``TOOL@VERSION`` is that stored version (``--registry URL``,
else ``TOOLKEEPER_REGISTRY``, opened read-only), so two published versions can be compared.

The exit code is 0 whatever the bump (the verdict is the output), unless ``--fail-on LEVEL``
is given: then 1 when the change reaches that level (``major``: a MAJOR change; ``minor``: MAJOR
or MINOR; ``patch``: any change at all), for a CI check. 2 on bad input (a stored version
that is not published is 1, as in the registry commands).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from toolkeeper.cli.contracts_group import alias, contracts_group
from toolkeeper.cli.documents import load_contract_or_schema
from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.registry_cmds import stored_contract
from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.classify import classify, classify_schemas
from toolkeeper.contracts.classify.rules import RULES
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import NotFoundError, ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.registry.location import ENV_VAR

__all__ = ["diff_documents", "reaches", "register"]

def _schema_of(side: ToolSpec | dict[str, Any], output: bool, label: str) -> dict[str, Any]:
    if isinstance(side, dict):
        return side
    schema = side.output_schema if output else side.input_schema
    if schema is None:
        raise ToolkeeperError(f"{label}: the contract has no outputSchema",
                              code="diff.no_output_schema", path="$.outputSchema")
    return schema


_FAIL_ON = ("major", "minor", "patch")
_RANK = {Bump.PATCH: 0, Bump.MINOR: 1, Bump.MAJOR: 2}


def reaches(verdict: Verdict, level: str) -> bool:
    """Whether the change reaches ``level`` (``patch``: any change at all)."""
    if level == "patch":
        return bool(verdict.changes)
    return _RANK[verdict.bump] >= _RANK[Bump(level)]


def _stored_reference(side: str) -> tuple[str, Version] | None:
    """``TOOL@VERSION`` when ``side`` names no file (else None: read as a file)."""
    name, sep, version = side.partition("@")
    if not sep or not name or not version or side == "-" or os.path.exists(side):
        return None
    return name, Version.parse(version)


def _load(side: str, registry: Registry | None) -> ToolSpec | dict[str, Any]:
    reference = _stored_reference(side)
    if reference is None or registry is None:
        return load_contract_or_schema(side)
    return stored_contract(registry, *reference)


def diff_documents(before_path: str, after_path: str, *, output: bool = False,
                   registry_url: str | None = None) -> Verdict:
    """The verdict for two files (or stored ``TOOL@VERSION`` s, read from ``registry_url``);
    raises ToolkeeperError on bad input."""
    stored = [_stored_reference(side) for side in (before_path, after_path)]
    registry = (Registry.open(registry_url, create=False, read_only=True)
                if any(stored) else None)
    try:
        before, after = _load(before_path, registry), _load(after_path, registry)
    finally:
        if registry is not None:
            registry.close()
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
@click.option("--fail-on", "fail_on", type=click.Choice(_FAIL_ON), default=None,
              help="Exit 1 when the change reaches this level (patch: any change).")
@click.option("--registry", "registry_url", envvar=ENV_VAR, default=None, metavar="URL",
              help=f"Where TOOL@VERSION sides are read from (env {ENV_VAR}).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def diff_cmd(before: str, after: str, output: bool, fail_on: str | None,
             registry_url: str | None, as_json: bool) -> None:
    """Classify the change from BEFORE to AFTER (contracts or bare JSON Schemas; '-' is stdin;
    TOOL@VERSION a stored version) as MAJOR, MINOR or PATCH and list every change with its
    rule, path and reason.

    Exit 0 with a verdict (whatever the bump), 1 with --fail-on when the change reaches that
    level (or a stored version is not published), 2 on bad input.
    """
    try:
        verdict = diff_documents(before, after, output=output, registry_url=registry_url)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json,
             code=EXIT_REFUSED if isinstance(exc, NotFoundError) else EXIT_BAD_INPUT)
    if as_json:
        echo_json(verdict.to_dict())
    else:
        _render(verdict)
    if fail_on is not None and reaches(verdict, fail_on):
        sys.exit(EXIT_REFUSED)


def register(group: click.Group) -> None:
    """Add ``contracts diff``, and ``diff`` as its alias, to the CLI group."""
    contracts_group.add_command(diff_cmd)
    alias(group, diff_cmd)
