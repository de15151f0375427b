"""Reading and checking the gateway's TOML configuration against the definitions table.

:func:`load_config` reads a file through the caller's bounded reader (the CLI passes
:func:`toolkeeper.cli.sources.read_source`: at most 4 MiB, UTF-8), parses it with
:mod:`tomllib`, checks every key against :data:`~toolkeeper.config.definitions.SETTINGS`,
fills the defaults, lays ``overrides`` (dotted key -> value, from ``serve``'s flags) over the
file and returns a :class:`~toolkeeper.config.model.GatewayConfig`. Paths in the file resolve
against the file's directory, paths in overrides against the working directory.

Every refusal is a :class:`~toolkeeper.errors.ConfigError` (the CLI exits 2) with a stable code
and the dotted key in ``data.key``:

``config.unreadable``, ``config.too_large``, ``config.not_utf8`` (the file; key ``""``),
``config.not_toml`` (``data.line``/``data.column``), ``config.unknown_key``,
``config.wrong_type``, ``config.not_allowed``, ``config.out_of_range``, ``config.bad_url``,
``config.unreadable_file``, ``config.bad_path``, ``config.bad_value``, ``config.missing_key``,
``config.jwt_without_issuer``, ``config.issuer_key_missing``, ``config.resource_needed``,
``config.anonymous_not_loopback``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from toolkeeper.config.checks import check_value, config_error, is_loopback
from toolkeeper.config.definitions import SECTIONS, SETTINGS, Setting
from toolkeeper.config.model import GatewayConfig, build_config
from toolkeeper.errors import ConfigError, ToolkeeperError

__all__ = ["check_tree", "load_config", "parse_config"]

_Tree = dict[str, Any]


def _schema() -> _Tree:
    """The definitions as a tree of segments (``issuers[]``, ``*`` kept) with rows at leaves."""
    root: _Tree = {}
    for section in SECTIONS:
        node = root
        for segment in section.key.split("."):
            node = node.setdefault(segment, {})
    for row in SETTINGS:
        *parents, leaf = row.key.split(".")
        node = root
        for segment in parents:
            node = node[segment]
        node[leaf] = row
    return root


_SCHEMA: Final = _schema()
_OPTIONAL: Final = frozenset(section.key for section in SECTIONS if section.optional)


def _child(schema: _Tree, name: str) -> tuple[str, Any] | None:
    for segment in (name, f"{name}[]", "*"):
        if segment in schema:
            return segment, schema[segment]
    return None


def _join(prefix: str, name: str) -> str:
    if not prefix:
        return name
    return f"{prefix}.{name}" if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f'{prefix}."{name}"'


def _walk(data: Mapping[str, Any], schema: _Tree, pattern: str, key: str, base: Path) -> _Tree:
    out: _Tree = {}
    for name, value in data.items():
        found = _child(schema, name)
        here = _join(key, name)
        if found is None:
            raise config_error(here, "unknown key", "config.unknown_key")
        segment, node = found
        sub_pattern = f"{pattern}.{segment}" if pattern else segment
        if isinstance(node, Setting):
            out[name] = check_value(node, value, here, base)
        elif segment.endswith("[]"):
            if not isinstance(value, list) or not all(isinstance(i, dict) for i in value):
                raise config_error(here, "expected an array of tables", "config.wrong_type",
                                   expected="array of tables")
            out[name] = [_walk(item, node, sub_pattern, f"{here}[{index}]", base)
                         for index, item in enumerate(value)]
        elif not isinstance(value, dict):
            raise config_error(here, "expected a table", "config.wrong_type", expected="table")
        else:
            out[name] = _walk(value, node, sub_pattern, here, base)
    for segment, node in schema.items():
        name = segment.removesuffix("[]")
        if segment == "*" or name in out:
            continue
        sub_pattern = f"{pattern}.{segment}" if pattern else segment
        if isinstance(node, Setting):
            if node.required:
                raise config_error(_join(key, name), "required", "config.missing_key")
            out[name] = tuple(node.default) if isinstance(node.default, list) else node.default
        elif segment.endswith("[]"):
            out[name] = []
        else:
            out[name] = None if sub_pattern in _OPTIONAL else _walk({}, node, sub_pattern,
                                                                    _join(key, name), base)
    return out


def _override(tree: _Tree, key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    node = tree
    for segment in parents:
        node = node[segment]
    row = next((r for r in SETTINGS if r.key == key), None)
    if row is None:
        raise KeyError(f"not an overridable key: {key}")
    node[leaf] = check_value(row, value, key, Path.cwd())


def _check_auth(tree: _Tree) -> None:
    auth, server = tree["auth"], tree["server"]
    issuers = auth["jwt"]["issuers"]
    if "jwt" in auth["methods"] and not issuers:
        raise config_error("auth.jwt.issuers", "auth.methods has jwt but no issuer is "
                           "configured", "config.jwt_without_issuer")
    for index, issuer in enumerate(issuers):
        symmetric = "HS256" in issuer["algorithms"]
        asymmetric = bool(set(issuer["algorithms"]) - {"HS256"})
        has_public = any(issuer[k] for k in ("public_key_file", "jwks_file", "jwks_url"))
        if (symmetric and not issuer["secret_file"]) or (asymmetric and not has_public):
            raise config_error(f"auth.jwt.issuers[{index}].algorithms",
                               "no key for these algorithms (HS256 needs secret_file; the "
                               "others public_key_file, jwks_file or jwks_url)",
                               "config.issuer_key_missing")
    if server["transport"] == "http" and auth["methods"] and not auth["resource"] \
            and server["port"] == 0:
        raise config_error("auth.resource", "needed with server.port 0: the 401 challenge and "
                           "the metadata name this gateway's URL, not known before it listens",
                           "config.resource_needed")
    if (server["transport"] == "http" and "jwt" in auth["methods"] and not auth["resource"]
            and not is_loopback(server["host"])
            and not all(issuer["audience"] for issuer in issuers)):
        raise config_error("auth.resource", f"needed with jwt on {server['host']}: a token's "
                           f"audience derived from the listen address is the same for every "
                           f"gateway listening there (set auth.resource, or every issuer's "
                           f"audience)", "config.resource_needed", host=server["host"])
    if (server["transport"] == "http" and not auth["methods"]
            and not is_loopback(server["host"])):
        raise config_error("auth.methods", f"the anonymous principal is served only on a "
                           f"loopback host, not {server['host']}: configure auth.methods "
                           f"(--auth keys|jwt)", "config.anonymous_not_loopback",
                           host=server["host"])


def _check_upstreams(tree: _Tree) -> None:
    seen: set[str] = set()
    for index, upstream in enumerate(tree["upstreams"]):
        if bool(upstream["url"]) == bool(upstream["command"]):
            raise config_error(f"upstreams[{index}].url", "set exactly one of url and command",
                               "config.upstream_endpoint")
        if upstream["token_file"] and upstream["header_file"]:
            raise config_error(f"upstreams[{index}].header_file", "set token_file or "
                               "header_file, not both", "config.upstream_credentials")
        if upstream["name"] in seen:
            raise config_error(f"upstreams[{index}].name", f"a second upstream named "
                               f"{upstream['name']!r}", "config.upstream_duplicate")
        seen.add(upstream["name"])


def _check_gate(tree: _Tree) -> None:
    gate = tree["gate"]
    if bool(gate["signing_key_id"]) != bool(gate["signing_key_file"]):
        missing = "signing_key_file" if gate["signing_key_id"] else "signing_key_id"
        raise config_error(f"gate.{missing}", "gate.signing_key_id and gate.signing_key_file "
                           "go together", "config.missing_key")
    seen: set[str] = set()
    for index, key in enumerate(gate["trusted_keys"]):
        if key["id"] in seen:
            raise config_error(f"gate.trusted_keys[{index}].id", f"a second trusted key "
                               f"named {key['id']!r}", "config.bad_value")
        seen.add(key["id"])


def check_tree(data: Mapping[str, Any], overrides: Mapping[str, Any] | None = None, *,
               base: Path | None = None) -> GatewayConfig:
    """The configuration of the parsed TOML ``data`` with ``overrides`` over it."""
    tree = _walk(data, _SCHEMA, "", "", base or Path.cwd())
    for key, value in (overrides or {}).items():
        _override(tree, key, value)
    _check_auth(tree)
    _check_upstreams(tree)
    _check_gate(tree)
    return build_config(tree)


def parse_config(text: str, overrides: Mapping[str, Any] | None = None, *,
                 base: Path | None = None) -> GatewayConfig:
    """The configuration of TOML ``text``; see :func:`check_tree`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        position = {"line": int(where[1]), "column": int(where[2])} if where else {}
        raise config_error("", f"not TOML: {exc}", "config.not_toml", **position) from None
    return check_tree(data, overrides, base=base)


_FILE_CODES: Final = {"file.unreadable": "config.unreadable", "file.too_large":
                      "config.too_large", "file.not_utf8": "config.not_utf8"}


def load_config(path: str | None, overrides: Mapping[str, Any] | None = None, *,
                read: Callable[[str], bytes]) -> GatewayConfig:
    """The configuration of the file at ``path`` (None: no file, only defaults and
    ``overrides``), read with ``read``."""
    if path is None:
        return check_tree({}, overrides)
    try:
        raw = read(path)
    except ToolkeeperError as exc:
        code = _FILE_CODES.get(exc.code, "config.unreadable")
        raise ConfigError(f"configuration file {exc.message}", code=code,
                          data={"key": "", **exc.data}) from None
    return parse_config(raw.decode("utf-8"), overrides, base=Path(path).resolve().parent)
