"""Usage errors (an unknown option or command, a missing argument, a value outside its
choices) rendered as every other error of the command line.

Without ``--json`` they are click's own text on stderr (the usage line, the error, a hint),
exit 2. With ``--json`` anywhere among the words before ``--`` (after it they belong to a
``--stdio`` command), the same error object :func:`toolkeeper.cli.output.fail` prints is
printed on stdout: ``{"error": {"code": "cli.usage", "message": ..., "data": {"reason": ...,
"command": ...}}}``, still exit 2. ``data.reason`` comes from a table (:data:`_REASONS`):
``no_such_command`` (``data.name``, ``data.choices``), ``no_such_option`` (``data.option``,
``data.possibilities``), ``bad_option_usage`` (``data.option``), ``missing_parameter`` and
``bad_parameter`` (``data.param``; ``data.choices`` for a choice), ``bad_argument_usage``,
``usage`` (any other). A click error that is not a usage error is ``cli.bad_input`` with
click's exit code (1).

:class:`ToolkeeperGroup` is the class of every group of the command line: it raises
:class:`NoSuchCommandError` for a word that names no command, and its :meth:`main` does the
rendering above.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn

import click

from toolkeeper.cli.output import fail
from toolkeeper.errors import ToolkeeperError

__all__ = ["USAGE_CODE", "NoSuchCommandError", "ToolkeeperGroup", "usage_error", "wants_json"]

USAGE_CODE: Final = "cli.usage"


class NoSuchCommandError(click.UsageError):
    """A word where a command was expected names none of the group's commands."""

    def __init__(self, message: str, ctx: click.Context | None, *, name: str,
                 choices: Sequence[str]) -> None:
        super().__init__(message, ctx)
        self.name = name
        self.choices = list(choices)


def _param_name(param: click.Parameter | None) -> str | None:
    if param is None:
        return None
    if isinstance(param, click.Option):
        return max(param.opts, key=len)  # the long spelling
    return (param.name or "").upper()


def _choices(param: click.Parameter | None) -> dict[str, Any]:
    kind = getattr(param, "type", None)
    if isinstance(kind, click.Choice):
        return {"choices": [str(choice) for choice in kind.choices]}
    return {}


def _no_such_command(exc: Any) -> dict[str, Any]:
    return {"name": exc.name, "choices": exc.choices}


def _no_such_option(exc: Any) -> dict[str, Any]:
    return {"option": exc.option_name, "possibilities": sorted(exc.possibilities or ())}


def _option(exc: Any) -> dict[str, Any]:
    return {"option": exc.option_name}


def _parameter(exc: Any) -> dict[str, Any]:
    return {"param": _param_name(exc.param), **_choices(exc.param)}


def _nothing(exc: Any) -> dict[str, Any]:
    return {}


_REASONS: Final[tuple[tuple[type[click.UsageError], str,
                            Callable[[Any], dict[str, Any]]], ...]] = (
    (NoSuchCommandError, "no_such_command", _no_such_command),
    (click.NoSuchOption, "no_such_option", _no_such_option),
    (click.BadOptionUsage, "bad_option_usage", _option),
    (click.MissingParameter, "missing_parameter", _parameter),
    (click.BadParameter, "bad_parameter", _parameter),
    (click.BadArgumentUsage, "bad_argument_usage", _nothing),
    (click.UsageError, "usage", _nothing),
)
"""A usage error's class -> ``data.reason`` and the details it adds; the first row the error
is an instance of wins (subclasses first: NoSuchOption is a UsageError)."""


def usage_error(exc: click.ClickException) -> ToolkeeperError:
    """The error object of a click error (module docstring)."""
    if not isinstance(exc, click.UsageError):
        return ToolkeeperError(exc.format_message(), code="cli.bad_input")
    reason: str = "usage"
    details: Callable[[Any], dict[str, Any]] = _nothing
    for kind, name, extract in _REASONS:
        if isinstance(exc, kind):
            reason, details = name, extract
            break
    data: dict[str, Any] = {"reason": reason}
    if exc.ctx is not None:
        data["command"] = exc.ctx.command_path
    data.update({key: value for key, value in details(exc).items() if value is not None})
    return ToolkeeperError(exc.format_message(), code=USAGE_CODE, data=data)


def wants_json(argv: Sequence[str]) -> bool:
    """Whether ``--json`` is among the words before ``--``."""
    words = list(argv)
    if "--" in words:
        words = words[:words.index("--")]
    return "--json" in words


_COMMAND_MISSES: Final = frozenset({
    click.UsageError, getattr(click.exceptions, "NoSuchCommand", click.UsageError)})
"""What click raises for a word that names no command (a plain UsageError before 8.2)."""


def _exit(rv: Any) -> NoReturn:
    sys.exit(rv if type(rv) is int else 0)


class ToolkeeperGroup(click.Group):
    """A click group whose usage errors follow the module docstring."""

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            if type(exc) in _COMMAND_MISSES and args and self.get_command(ctx, args[0]) is None:
                raise NoSuchCommandError(exc.format_message(), ctx, name=args[0],
                                         choices=self.list_commands(ctx)) from None
            raise

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode or not wants_json(argv):
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(argv, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            fail(usage_error(exc), as_json=True, code=exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        _exit(rv)
