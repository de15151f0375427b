"""``toolkeeper contracts export MODULE:ATTR DIR``: the contracts typed handlers derive, as
contract files.

One file per tool version, ``DIR/<name>-<version>.json``, holding the contract's canonical
JSON (sorted keys, compact) and a newline: the format ``serve --estate`` and ``publish`` read,
byte-identical for identical hints. ``DIR`` is created when missing. A file already there
with the same bytes is left as it is; one with other bytes is never replaced silently: the
export is refused (``export.would_overwrite``, exit 1, every such file in ``data.files``) and
nothing is written, unless ``--force`` is given. Exit codes: 0 done, 1 refused, 2 bad input
(handlers reference, no typed tools, a directory that cannot be written).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click

from toolkeeper.cli.contracts_group import contracts_group
from toolkeeper.cli.handler_refs import load_handlers
from toolkeeper.cli.output import EXIT_REFUSED, echo_json, fail
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.spec import ToolSpec, spec_to_mapping
from toolkeeper.errors import ToolkeeperError

__all__ = ["contract_bytes", "contract_file_name", "register"]


def contract_file_name(spec: ToolSpec) -> str:
    """``<name>-<version>.json`` (tool names hold no path separator: MCP name rules)."""
    return f"{spec.name}-{spec.version}.json"


def contract_bytes(spec: ToolSpec) -> bytes:
    """The contract file's bytes: canonical JSON of its content and a newline."""
    return canonical_json(spec_to_mapping(spec, lifecycle=False)) + b"\n"


def _existing(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _write(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same directory, so a reader never sees half."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".export-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _plan(specs: list[ToolSpec], directory: Path) -> list[tuple[ToolSpec, Path, bytes, str]]:
    """(spec, path, bytes, what happens: ``written``, ``unchanged`` or ``conflict``)."""
    plan = []
    for spec in specs:
        path = directory / contract_file_name(spec)
        data = contract_bytes(spec)
        before = _existing(path)
        status = "written" if before is None else "unchanged" if before == data else "conflict"
        plan.append((spec, path, data, status))
    return plan


@click.command("export")
@click.argument("reference", metavar="MODULE:ATTR")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace contract files whose bytes differ.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def export_cmd(reference: str, directory: Path, force: bool, as_json: bool) -> None:
    """Write the contract of every typed tool of MODULE:ATTR (a ToolHandlers, or a function
    returning one; MODULE may be a path/to/file.py) into DIR, one file per tool version.

    A file with other content is refused unless --force. Exit 0 done, 1 refused, 2 bad input.
    """
    try:
        specs = load_handlers(reference, option="contracts export").contracts()
        if not specs:
            raise ToolkeeperError(f"{reference!r} declares no typed tools",
                                  code="export.no_contracts")
        directory.mkdir(parents=True, exist_ok=True)
        plan = _plan(specs, directory)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    except OSError as exc:
        fail(ToolkeeperError(f"{directory}: {exc.strerror or exc}", code="file.unwritable"),
             as_json=as_json)
    conflicts = [str(path) for _, path, _, status in plan if status == "conflict"]
    if conflicts and not force:
        fail(ToolkeeperError(f"{len(conflicts)} file(s) hold other content (use --force to "
                             f"replace): {', '.join(conflicts)}", code="export.would_overwrite",
                             data={"files": conflicts}), as_json=as_json, code=EXIT_REFUSED)
    done: list[dict[str, Any]] = []
    for spec, path, data, status in plan:
        if status != "unchanged":
            try:
                _write(path, data)
            except OSError as exc:
                fail(ToolkeeperError(f"{path}: {exc.strerror or exc}", code="file.unwritable"),
                     as_json=as_json)
        done.append({"file": str(path), "name": spec.name, "version": str(spec.version),
                     "status": "written" if status != "unchanged" else "unchanged"})
    if as_json:
        echo_json(done)
    else:
        for row in done:
            click.echo(f"{row['status']} {row['file']}")


def register(group: click.Group) -> None:
    """Add the ``contracts`` group, with ``export`` in it, to ``group``."""
    contracts_group.add_command(export_cmd)
    group.add_command(contracts_group)
