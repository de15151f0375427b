"""``toolkeeper contracts validate`` (alias ``toolkeeper validate``) and ``toolkeeper contracts
repair``: arguments against a contract's input schema or a bare schema.

``contracts repair CONTRACT_OR_SCHEMA ARGS_JSON`` runs the repair pass (SPEC 1.3) and prints
the repaired arguments as canonical JSON on stdout, so they can be piped on; each repair and
each error that remains is a line on stderr. ``--json`` prints the object ``validate
--repair --json`` prints (``repaired``, ``repairs``, ``valid``, ``errors``). Exit 0 when the
repaired arguments are valid, 1 when errors remain, 2 on bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from toolkeeper.cli.contracts_group import alias, contracts_group
from toolkeeper.cli.documents import load_contract_or_schema, parse_json, read_document
from toolkeeper.cli.output import EXIT_OK, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.sources import STDIN, read_source
from toolkeeper.contracts.repair import repair
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.errors import ToolkeeperError

__all__ = ["load_schema_document", "register"]


def load_schema_document(path: str) -> tuple[dict[str, Any], bool]:
    """(input schema, assert_formats) from a contract file or a bare JSON Schema file."""
    loaded = load_contract_or_schema(path)
    if isinstance(loaded, ToolSpec):
        return loaded.input_schema, loaded.assert_formats
    return loaded, False


# Text starting like a JSON object, array or string is inline JSON first (a file only if it is
# not valid JSON); anything else is a file first. Inline JSON can be longer than a file name may.
_INLINE_OPENERS = ("{", "[", '"')


def _is_file(source: str) -> bool:
    """Whether ``source`` names something to read: a file, but also a device or a pipe
    (``/dev/stdin``, a shell's ``<(...)``); reading a directory or an endless device is then
    refused as the reading of any document is."""
    try:
        return Path(source).exists()
    except OSError:  # ENAMETOOLONG and the like: not the name of a file we can read
        return False


def _read_arguments(source: str) -> Any:
    """A file, ``-`` for stdin, or inline JSON (any JSON value: ``'"abc"'``, ``5``, ``{...}``)."""
    if source == STDIN:
        return parse_json(read_source(STDIN))
    looks_inline = source.lstrip().startswith(_INLINE_OPENERS)
    if not looks_inline and _is_file(source):
        return read_document(source)
    try:
        return parse_json(source)
    except ToolkeeperError as exc:
        if exc.code != "json.invalid":
            raise  # JSON text, but not JSON data (too deep, duplicate key, ...)
        if looks_inline and _is_file(source):
            return read_document(source)  # a file whose name starts like JSON
        if looks_inline:
            raise  # meant as inline JSON: report the JSON error
        raise ToolkeeperError(f"{source}: no such file, and not inline JSON",
                              code="file.unreadable") from None


def _render_human(errors: list[dict[str, Any]], repairs: list[dict[str, Any]] | None) -> None:
    for r in repairs or []:
        click.echo(f"repaired {r['path']}: {r['rule']}")
    if not errors:
        click.echo("valid")
    for e in errors:
        click.echo(f"{e['path']}: {e['message']} [{e['keyword']}]")


@click.command("validate")
@click.argument("contract_or_schema")
@click.argument("args_json")
@click.option("--repair", "do_repair", is_flag=True, help="Run the repair pass first.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def validate_cmd(contract_or_schema: str, args_json: str, do_repair: bool, as_json: bool) -> None:
    """Validate ARGS_JSON (a file, '-' for stdin, or inline JSON) against a contract or schema.

    Exit 0 valid, 1 invalid, 2 bad input.
    """
    try:
        schema, assert_formats = load_schema_document(contract_or_schema)
        arguments = _read_arguments(args_json)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    out: dict[str, Any] = {}
    repairs: list[dict[str, Any]] | None = None
    if do_repair:
        result = repair(arguments, schema, assert_formats=assert_formats)
        issues = list(result.errors)
        repairs = [r.to_dict() for r in result.repairs]
        out["repaired"] = result.arguments
        out["repairs"] = repairs
    else:
        issues = compile_schema(schema, assert_formats=assert_formats).errors(arguments)
    errors = [i.to_dict() for i in issues]
    out["valid"] = not errors
    out["errors"] = errors
    if as_json:
        echo_json(out)
    else:
        _render_human(errors, repairs)
    sys.exit(EXIT_OK if not errors else EXIT_REFUSED)


@click.command("repair")
@click.argument("contract_or_schema")
@click.argument("args_json")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def repair_cmd(contract_or_schema: str, args_json: str, as_json: bool) -> None:
    """Repair ARGS_JSON (a file, '-' for stdin, or inline JSON) against a contract or schema
    and print the repaired arguments (each repair and remaining error on stderr).

    Exit 0 valid after repair, 1 still invalid, 2 bad input.
    """
    try:
        schema, assert_formats = load_schema_document(contract_or_schema)
        arguments = _read_arguments(args_json)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    result = repair(arguments, schema, assert_formats=assert_formats)
    repairs = [r.to_dict() for r in result.repairs]
    errors = [i.to_dict() for i in result.errors]
    if as_json:
        echo_json({"repaired": result.arguments, "repairs": repairs, "valid": not errors,
                   "errors": errors})
    else:
        echo_json(result.arguments)
        for r in repairs:
            click.echo(f"repaired {r['path']}: {r['rule']}", err=True)
        for e in errors:
            click.echo(f"{e['path']}: {e['message']} [{e['keyword']}]", err=True)
    sys.exit(EXIT_OK if not errors else EXIT_REFUSED)


def register(group: click.Group) -> None:
    """Add ``contracts validate`` and ``contracts repair``, and ``validate`` as the alias of
    the first, to the CLI group."""
    contracts_group.add_command(validate_cmd)
    contracts_group.add_command(repair_cmd)
    alias(group, validate_cmd)
