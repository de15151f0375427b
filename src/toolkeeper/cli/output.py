"""Rendering helpers shared by commands: canonical JSON to stdout, errors to stderr with exit 2."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.redaction import redact_text
from toolkeeper.errors import PublishRefusedError, ToolkeeperError

__all__ = ["EXIT_BAD_INPUT", "EXIT_HALT", "EXIT_HOLD", "EXIT_OK", "EXIT_REFUSED", "change_lines",
           "echo_json", "error_object", "fail", "fail_refused", "refusal_json"]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2
EXIT_HALT = 3
"""The release gate halts: the candidate failed and its rollback target is not proven."""
EXIT_HOLD = 4
"""The release gate holds: the evidence is not enough yet (an inconclusive window)."""


def echo_json(value: Any) -> None:
    """Print canonical JSON (sorted keys) and a newline."""
    click.echo(canonical_json(value).decode("utf-8"))


def _printable(text: str) -> str:
    """``text`` with lone surrogates (an undecodable file name in argv) as ``\\udcff`` escapes,
    and secrets masked (an error may quote a handler's exception or a registry URL, and goes
    to the same stream as the log): an error message must print whatever the input was."""
    return redact_text(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def error_object(error: ToolkeeperError) -> dict[str, Any]:
    """The one error object of the command line: ``code``, ``message``, and ``path`` and
    ``data`` when present (message and path printable and redacted)."""
    rendered = error.to_dict()
    rendered["message"] = _printable(error.message)
    if error.path is not None:
        rendered["path"] = _printable(error.path)
    return rendered


def refusal_json(error: PublishRefusedError) -> dict[str, Any]:
    """A publish refusal under ``--json``: the error object (``code`` the guard's rule id,
    ``data`` its details), and the details' four keys beside it as well (``rule``, ``bump``,
    ``changes``, ``minimumVersion``), where scripts written before the one error object read
    them."""
    data = error.data
    rendered = error_object(error)
    rendered.update({"rule": data.get("rule", error.code), "bump": data.get("bump"),
                     "changes": data.get("changes", []),
                     "minimumVersion": data.get("minimumVersion")})
    return {"error": rendered}


def fail(error: ToolkeeperError | str, *, as_json: bool = False, code: int = EXIT_BAD_INPUT
         ) -> NoReturn:
    """Report a bad-input error (JSON on stdout with --json, else a line on stderr) and exit."""
    if isinstance(error, str):
        error = ToolkeeperError(error, code="cli.bad_input")
    rendered = error_object(error)
    if as_json:
        echo_json({"error": rendered})
    else:
        click.echo(f"error: {rendered['message']} [{error.code}]", err=True)
    sys.exit(code)


def change_lines(error: PublishRefusedError) -> list[str]:
    """One line per change a publish refusal lists: its path, reason, classifier rule id and
    the bump it needs."""
    return [f"  {change['path']}: {change['reason']} [{change['rule']}, {change['bump']}]"
            for change in error.data.get("changes", [])]


def fail_refused(error: PublishRefusedError) -> NoReturn:
    """Report a publish refusal on stderr (the guard's rule id, then every change with its
    classifier rule id) and exit 1."""
    click.echo(f"refused: {_printable(error.message)} [{error.code}]", err=True)
    for line in change_lines(error):
        click.echo(_printable(line), err=True)
    sys.exit(EXIT_REFUSED)
