"""``serve``'s configuration: the ``--config`` file with the flags given on the command line
over it.

A flag overrides the key its row of the definitions table names (``Setting.flag``); a flag
left at its default does not, so a file's ``server.port`` stands unless ``--port`` is typed.
Flag values go through the same checks as the file's (a bad one names its key too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import click
from click.core import ParameterSource

from toolkeeper.cli.sources import read_source
from toolkeeper.config import SETTINGS, GatewayConfig, load_config
from toolkeeper.config.checks import config_error

__all__ = ["AUTH_CHOICES", "config_from_flags"]

AUTH_CHOICES: Final = ("none", "keys", "jwt")
_GIVEN: Final = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _auth_methods(values: tuple[str, ...]) -> list[str]:
    if "none" in values and len(set(values)) > 1:
        raise config_error("auth.methods", "--auth none cannot be combined with keys or jwt",
                           "config.not_allowed", allowed=list(AUTH_CHOICES))
    return [value for value in dict.fromkeys(values) if value != "none"]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return str(value) if isinstance(value, Path) else value


_CONVERT: Final[Mapping[str, Callable[[Any], Any]]] = {
    "--stdio": lambda on: "stdio" if on else "http",
    "--auth": _auth_methods,
}
"""Flags whose value is not the key's value as it stands."""


def _overrides(ctx: click.Context) -> dict[str, Any]:
    by_flag = {opt: param for param in ctx.command.params for opt in param.opts}
    out: dict[str, Any] = {}
    for row in SETTINGS:
        param = by_flag.get(row.flag or "")
        if param is None or param.name is None:
            continue
        if ctx.get_parameter_source(param.name) in _GIVEN:
            value = ctx.params[param.name]
            out[row.key] = _CONVERT.get(row.flag or "", _plain)(value)
    return out


def config_from_flags(ctx: click.Context, path: str | None) -> GatewayConfig:
    """The configuration of ``--config path`` (None: none) and the flags given in ``ctx``;
    raises :class:`~toolkeeper.errors.ConfigError`."""
    return load_config(path, _overrides(ctx), read=read_source)
