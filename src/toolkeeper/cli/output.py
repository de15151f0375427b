"""Rendering helpers shared by commands: canonical JSON to stdout, errors to stderr with exit 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.errors import ContractError, ToolkeeperError

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_REFUSED", "echo_json", "fail", "read_document"]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2


def echo_json(value: Any) -> None:
    """Print canonical JSON (sorted keys) and a newline."""
    click.echo(canonical_json(value).decode("utf-8"))


def fail(error: ToolkeeperError | str, *, as_json: bool = False, code: int = EXIT_BAD_INPUT
         ) -> NoReturn:
    """Report a bad-input error (JSON on stdout with --json, else a line on stderr) and exit."""
    if isinstance(error, str):
        error = ToolkeeperError(error, code="cli.bad_input")
    if as_json:
        echo_json({"error": error.to_dict()})
    else:
        click.echo(f"error: {error.message} [{error.code}]", err=True)
    sys.exit(code)


def read_document(path: str) -> Any:
    """Read a JSON or YAML file (``-`` is stdin). JSON keeps big integers exact."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise ContractError(f"cannot read {path}: {exc.strerror}", code="file.unreadable") from None
    if path.endswith((".yaml", ".yml")):
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ContractError(f"{path}: invalid YAML: {exc}", code="yaml.invalid") from None
    return loads_json(raw)
