"""Checking one configuration value against its :class:`~toolkeeper.config.definitions.Setting`.

:func:`check_value` returns the value as the settings hold it (a float for a ``float`` key
given as an integer, a path resolved against the configuration file's directory) or raises
:class:`~toolkeeper.errors.ConfigError` whose ``data.key`` is the concrete dotted key
(``auth.jwt.issuers[0].secret_file``). The type test and the named checks are tables.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from toolkeeper.config.definitions import BOOLEAN, FLOAT, INTEGER, STRING, STRINGS, Setting
from toolkeeper.errors import ConfigError
from toolkeeper.server.sealing import parse_sealing_keys

__all__ = ["MIN_SECRET_BYTES", "check_value", "config_error", "is_loopback"]


def config_error(key: str, reason: str, code: str, **data: Any) -> ConfigError:
    """The refusal of ``key`` (dotted; ``""`` for the file as a whole)."""
    where = f"{key}: " if key else ""
    return ConfigError(f"configuration {where}{reason}", code=code, data={"key": key, **data})


_TYPES: Final[dict[str, Callable[[Any], bool]]] = {
    STRING: lambda v: isinstance(v, str),
    INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool),
    FLOAT: lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    BOOLEAN: lambda v: isinstance(v, bool),
}

_REGISTRY_SCHEMES: Final = ("memory", "sqlite", "postgresql", "postgres")
_PATH: Final = re.compile(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*")
_HOST: Final = re.compile(r"[A-Za-z0-9.:%_-]+")


def _registry_url(value: str, base: Path) -> str:
    scheme, sep, _ = value.partition(":")
    if value and (not sep or scheme.lower() not in _REGISTRY_SCHEMES):
        raise ValueError("config.bad_url", "not a registry URL (memory:, sqlite:///path.db, "
                         "postgresql://...)")
    return value


def _http_url(value: str, base: Path) -> str:
    if not value:
        return value
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        parts = None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname
            or any(c.isspace() for c in value)):
        raise ValueError("config.bad_url", "not an http(s) URL")
    return value


def _resolve(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _readable_file(value: str, base: Path) -> str:
    if not value:
        return value
    path = _resolve(value, base)
    try:
        with open(path, "rb") as file:
            file.read(1)
    except OSError as exc:
        raise ValueError("config.unreadable_file",
                         f"cannot read {value}: {exc.strerror or exc}") from None
    return path


MIN_SECRET_BYTES: Final = 32
"""The shortest HS256 secret accepted (RFC 7518 3.2: a key at least as long as the hash)."""


def _secret_file(value: str, base: Path) -> str:
    path = _readable_file(value, base)
    if path:
        with open(path, "rb") as file:
            secret = file.read(1 << 16).strip()
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError("config.bad_value", f"an HS256 secret of {len(secret)} bytes; at "
                             f"least {MIN_SECRET_BYTES} are needed")
    return path


def _sealing_keys_file(value: str, base: Path) -> str:
    path = _readable_file(value, base)
    if path:
        with open(path, "rb") as file:
            try:
                parse_sealing_keys(file.read(1 << 16).decode("ascii"))
            except UnicodeDecodeError:
                raise ValueError("config.bad_value", "sealing keys are base64 text") from None
    return path


def _directory(value: str, base: Path) -> str:
    path = _resolve(value, base)
    if not os.path.isdir(path):
        raise ValueError("config.bad_path", f"{value} is not a directory")
    return path


def _handlers_ref(value: str, base: Path) -> str:
    module, sep, attribute = value.rpartition(":")
    if not sep or not module or not attribute:
        raise ValueError("config.bad_value", "expected module:ATTR or path/to/file.py:ATTR")
    if module.endswith(".py"):
        return f"{_resolve(module, base)}:{attribute}"
    return value


def _url_path(value: str, base: Path) -> str:
    if not _PATH.fullmatch(value):
        raise ValueError("config.bad_value", "must be an absolute URL path such as /mcp")
    return value


def _host(value: str, base: Path) -> str:
    if not _HOST.fullmatch(value):
        raise ValueError("config.bad_value", "not a host name or IP address")
    return value


def _nonempty(value: str, base: Path) -> str:
    if not value.strip():
        raise ValueError("config.bad_value", "must not be empty")
    return value


_CHECKS: Final[dict[str, Callable[[str, Path], str]]] = {
    "registry_url": _registry_url,
    "http_url": _http_url,
    "readable_file": _readable_file,
    "secret_file": _secret_file,
    "sealing_keys_file": _sealing_keys_file,
    "directory": _directory,
    "handlers_ref": _handlers_ref,
    "url_path": _url_path,
    "host": _host,
    "nonempty": _nonempty,
}


def _scalar(row: Setting, scalar_type: str, value: Any, key: str, base: Path) -> Any:
    if not _TYPES[scalar_type](value):
        raise config_error(key, f"expected {row.type}, got {_toml_type(value)}",
                           "config.wrong_type", expected=row.type)
    if row.choices is not None and value not in row.choices:
        raise config_error(key, f"{value!r} is not one of {', '.join(row.choices)}",
                           "config.not_allowed", allowed=list(row.choices))
    if scalar_type in (INTEGER, FLOAT):
        return _in_range(row, value, key)
    if row.check is not None:
        try:
            return _CHECKS[row.check](value, base)
        except ValueError as exc:
            code, reason = exc.args
            raise config_error(key, reason, code) from None
    return value


def _in_range(row: Setting, value: float, key: str) -> float:
    low, high = row.minimum, row.maximum
    fine = math.isfinite(value) and (
        (low is None or (value > low if row.min_open else value >= low))
        and (high is None or value <= high))
    if not fine:
        bound = "more than" if row.min_open else "at least"
        raise config_error(key, f"{value} is out of range ({bound} {low}, at most {high})",
                           "config.out_of_range", minimum=low, maximum=high)
    return float(value) if row.type == FLOAT else value


def check_value(row: Setting, value: Any, key: str, base: Path) -> Any:
    """``value`` of ``row`` at the concrete ``key``, checked; relative paths resolve
    against ``base``."""
    if row.type != STRINGS:
        return _scalar(row, row.type, value, key, base)
    if not isinstance(value, list):
        raise config_error(key, f"expected {row.type}, got {_toml_type(value)}",
                           "config.wrong_type", expected=row.type)
    return tuple(_scalar(row, STRING, item, f"{key}[{index}]", base)
                 for index, item in enumerate(value))


def _toml_type(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
             dict: "table"}
    return names.get(type(value), "a date or time")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and the loopback addresses (127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
