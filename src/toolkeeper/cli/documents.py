"""Reading the documents commands take: contracts, bare JSON Schemas and arguments.

Every document the CLI reads (JSON or YAML, a file, stdin or inline text) is turned into JSON data
by :func:`json_data` or refused as bad input (a :class:`ContractError`, exit 2, with the JSON path
of the offending value). YAML and the JSON decoder can hold values canonical JSON cannot, and they
used to escape as tracebacks or be stored as something else (a ``.nan`` became ``null``):

=====================  ======================================================================
``json.not_json``      a value of a type JSON does not have (a YAML date, binary, set, pairs);
                       ``data.type`` names the Python type
``json.key_not_string`` a mapping key that is not a string (``path`` is the mapping's)
``json.lone_surrogate`` a string or key holding a lone UTF-16 surrogate (unencodable)
``json.not_finite``    NaN or an infinity (YAML ``.nan``/``.inf``, or a YAML float that overflows)
``json.too_deep``      nesting beyond :data:`MAX_DEPTH` (``data.maxDepth``)
``json.duplicate_key`` a key given twice in one object or mapping (the first value was lost)
``yaml.recursive_alias`` a YAML alias inside the node it refers to (a cyclic document)
``yaml.too_large``     YAML aliases repeating more than :data:`MAX_ALIAS_REUSE` values
=====================  ======================================================================

The bytes come from :mod:`toolkeeper.cli.sources` (at most 4 MiB of UTF-8: ``file.too_large``,
``file.not_utf8`` with the offset of the first bad byte, ``file.unreadable``).

A mapping with any of the keys ``name``, ``version``, ``inputSchema`` is a contract and must be
a complete, valid one (a contract missing its version is refused, never read as an
unconstrained bare schema); any other mapping is a bare schema and must compile.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import yaml

from toolkeeper.cli.sources import read_source
from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.json_values import Link, has_lone_surrogate, link_parts
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.contracts.validate import compile_schema, format_path
from toolkeeper.errors import ContractError, ToolkeeperError
from toolkeeper.protocol.envelope import MAX_DEPTH

__all__ = [
    "CONTRACT_KEYS",
    "MAX_ALIAS_REUSE",
    "MAX_DEPTH",
    "json_data",
    "load_contract_or_schema",
    "parse_json",
    "read_document",
]

CONTRACT_KEYS = ("name", "version", "inputSchema")

# MAX_DEPTH is the gateway's wire bound (protocol.envelope): a document nested deeper could not
# cross the gateway (a schema travels inside tools/list, arguments inside tools/call), so the CLI
# refuses it at the same bound rather than accept what would be refused later. The deepest
# fixture and example contract nest 10 levels.

MAX_ALIAS_REUSE: Final = 100_000
"""How many values YAML aliases may repeat in one document (each use of an alias counts every
value under its anchor). Bounds alias bombs: a few lines of anchors can stand for 10**9 values."""

# A linked trail (parent trail, key or index): the path of a value, built only for an error.
_Trail = Link


def _render_part(part: str | int) -> str:
    if isinstance(part, int) or not has_lone_surrogate(part):
        return format_path([part])[1:]
    return f"[{json.dumps(part)}]"  # a lone surrogate, as a JSON escape: the path stays printable


def _render(trail: _Trail) -> str:
    return "$" + "".join(_render_part(part) for part in link_parts(trail))


def _refuse(code: str, message: str, trail: _Trail, **data: Any) -> ContractError:
    path = _render(trail)
    return ContractError(f"{path}: {message}", code=code, path=path, data=data or None)


def _string_problem(value: str) -> tuple[str, str] | None:
    if not has_lone_surrogate(value):
        return None
    return "json.lone_surrogate", "a string holds a lone surrogate (not Unicode text)"


def _float_problem(value: float) -> tuple[str, str] | None:
    if math.isfinite(value):
        return None
    return "json.not_finite", "NaN and infinities are not JSON numbers"


def _no_problem(value: object) -> None:
    return None


# The JSON scalar types, each with its check (exact types: YAML and msgspec build no subclasses).
_SCALARS: Mapping[type, Callable[[Any], tuple[str, str] | None]] = MappingProxyType({
    str: _string_problem, float: _float_problem, int: _no_problem, bool: _no_problem,
    type(None): _no_problem,
})
_CONTAINERS = (dict, list)


def _check_scalar(value: Any, trail: _Trail) -> None:
    kind = type(value)
    check = _SCALARS.get(kind)
    if check is None:
        raise _refuse("json.not_json", f"a {kind.__name__} is not a JSON value", trail,
                      type=kind.__name__)
    problem = check(value)
    if problem is not None:
        raise _refuse(*problem, trail)


def _check_key(key: Any, trail: _Trail) -> None:
    if type(key) is not str:
        raise _refuse("json.key_not_string", "a mapping key is not a string", trail,
                      keyType=type(key).__name__)
    if has_lone_surrogate(key):
        raise _refuse("json.lone_surrogate", "a key holds a lone surrogate", (trail, key))


def _items(node: dict[Any, Any] | list[Any], trail: _Trail) -> list[tuple[str | int, Any]]:
    if isinstance(node, list):
        return list(enumerate(node))
    for key in node:
        if type(key) is not str or not key.isascii():
            _check_key(key, trail)
    return list(node.items())


def json_data(value: Any) -> Any:
    """``value`` itself when it is JSON data, else a ContractError naming an offending value
    (always the same one for the same input) by its JSON path.

    JSON data: dicts with string keys, lists, strings without lone surrogates, ints, finite
    floats, booleans and None, nested at most :data:`MAX_DEPTH` deep (the root container is
    depth 1). The walk is iterative, so hostile input cannot exhaust the stack, and the depth
    bound ends it on a cyclic value. Containers go on the stack; scalars are checked in place
    (most values are scalars: a million take about half a second).
    """
    if type(value) not in _CONTAINERS:
        _check_scalar(value, None)
        return value
    stack: list[tuple[Any, int, _Trail]] = [(value, 1, None)]
    while stack:
        node, depth, trail = stack.pop()
        if depth > MAX_DEPTH:
            raise _refuse("json.too_deep", f"nested deeper than {MAX_DEPTH} levels", trail,
                          maxDepth=MAX_DEPTH)
        nested: list[tuple[Any, int, _Trail]] = []
        for part, child in _items(node, trail):
            kind = type(child)
            if kind is dict or kind is list:
                nested.append((child, depth + 1, (trail, part)))
            elif kind is not int and kind is not bool and child is not None and not (
                    kind is str and child.isascii()):
                _check_scalar(child, (trail, part))
        stack.extend(reversed(nested))
    return value


class _Duplicate(dict[str, Any]):
    """Stands in for a JSON object that repeats ``key`` (stdlib pass, only to find the path)."""

    def __init__(self, pairs: list[tuple[str, Any]], key: str) -> None:
        super().__init__(pairs)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    built = dict(pairs)
    if len(built) == len(pairs):
        return built
    counts = Counter(key for key, _ in pairs)
    return _Duplicate(pairs, next(key for key, _ in pairs if counts[key] > 1))


def _find_duplicate(value: Any) -> tuple[_Trail, str] | None:
    stack: list[tuple[Any, _Trail]] = [(value, None)]
    while stack:
        node, trail = stack.pop()
        if isinstance(node, _Duplicate):
            return trail, node.key
        if isinstance(node, dict):
            stack.extend((child, (trail, key)) for key, child in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((child, (trail, i)) for i, child in reversed(list(enumerate(node))))
    return None


def _refuse_json_duplicates(raw: bytes | str) -> None:
    """msgspec keeps the last of two equal keys silently; a second, stdlib pass (numbers left
    unparsed, about a fifth of a second per million values) sees the pairs. Runs after
    :func:`json_data`, so the nesting is bounded."""
    flagged: list[bool] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        built = _object(pairs)
        if type(built) is _Duplicate:
            flagged.append(True)
        return built

    try:
        tree = json.loads(raw, object_pairs_hook=hook, parse_int=len, parse_float=len)
    except (ValueError, RecursionError):  # msgspec accepted it: nothing more to say
        return
    found = _find_duplicate(tree) if flagged else None
    if found is not None:
        trail, key = found
        raise _refuse("json.duplicate_key", "a key is given twice in one object", (trail, key))


def parse_json(raw: bytes | str) -> Any:
    """Decode JSON text into JSON data (big integers exact); refusals as in :func:`json_data`,
    plus ``json.invalid`` and ``json.duplicate_key``."""
    if isinstance(raw, str) and has_lone_surrogate(raw):  # undecodable bytes in argv, say
        raise ContractError("invalid JSON: the text is not Unicode (a lone surrogate)",
                            code="json.invalid")
    try:
        decoded = loads_json(raw)
    except ContractError as exc:
        if exc.code != "json.too_deep":
            raise
        raise _refuse("json.too_deep", f"nested deeper than {MAX_DEPTH} levels", None,
                      maxDepth=MAX_DEPTH) from None  # beyond what the decoder would build
    value = json_data(decoded)
    _refuse_json_duplicates(raw)
    return value


def _node_children(node: yaml.Node, trail: _Trail) -> list[tuple[yaml.Node, _Trail]]:
    if isinstance(node, yaml.SequenceNode):
        return [(child, (trail, i)) for i, child in enumerate(node.value)]
    children: list[tuple[yaml.Node, _Trail]] = []
    keys: set[str] = set()
    for key_node, child in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
        if key_node.tag == "tag:yaml.org,2002:str":  # `<<` merges may override: not counted
            if key in keys:
                raise _refuse("json.duplicate_key", "a key is given twice in one mapping",
                              (trail, key))
            keys.add(key)
        children.append((child, (trail, key)))
    return children


def _check_yaml_nodes(root: yaml.Node) -> None:
    """Refuse what aliases make of a composed YAML document: cycles, bombs; and duplicate keys.

    An alias is the anchored node itself, shared: a node entered again while still open is a
    cycle, a node entered again after it closed is a repetition (counted with its subtree).
    """
    seen: set[int] = set()
    open_nodes: set[int] = set()
    reused = 0
    stack: list[tuple[yaml.Node, _Trail, bool]] = [(root, None, False)]
    while stack:
        node, trail, leaving = stack.pop()
        ident = id(node)
        if leaving:
            open_nodes.discard(ident)
            continue
        if ident in open_nodes:
            raise _refuse("yaml.recursive_alias", "an alias refers to a node that contains it",
                          trail)
        if ident in seen:
            reused += 1
            if reused > MAX_ALIAS_REUSE:
                raise _refuse("yaml.too_large", f"aliases repeat more than {MAX_ALIAS_REUSE} "
                              "values", trail, maxAliasReuse=MAX_ALIAS_REUSE)
        if isinstance(node, yaml.ScalarNode):
            seen.add(ident)
            continue
        children = _node_children(node, trail)  # duplicate keys refused here
        seen.add(ident)
        open_nodes.add(ident)
        stack.append((node, trail, True))
        stack.extend((child, at, False) for child, at in reversed(children))


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` whose composer (recursive) stops inside a container nested deeper
    than :data:`MAX_DEPTH`, by line and column, before the stack can run out whatever the
    caller's own depth."""

    def __init__(self, stream: bytes) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:  # the parent is a container past the bound
                # peek_event is untyped in types-PyYAML; it returns the node's first Event
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise ContractError(
                    f"line {mark.line + 1}, column {mark.column + 1}: nested deeper than "
                    f"{MAX_DEPTH} levels", code="json.too_deep", path="$",
                    data={"maxDepth": MAX_DEPTH})
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _yaml_invalid(exc: yaml.YAMLError) -> ContractError:
    """PyYAML's message (it spans lines: the problem, then where) on one line."""
    return ContractError(f"invalid YAML: {' '.join(str(exc).split())}", code="yaml.invalid")


def _load_yaml(raw: bytes) -> Any:
    try:  # the loader's reader checks the text as it is made (a NUL byte is refused there)
        loader = _Loader(raw)
    except yaml.YAMLError as exc:
        raise _yaml_invalid(exc) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_yaml_nodes(root)
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise _yaml_invalid(exc) from None
    finally:
        loader.dispose()


def read_document(path: str) -> Any:
    """A JSON or YAML file (``-`` is stdin, read as JSON) as JSON data, or a ContractError whose
    message names the file (the bytes are read as :func:`~toolkeeper.cli.sources.read_source`
    reads them: at most 4 MiB of UTF-8)."""
    raw = read_source(path)
    try:
        if path.endswith((".yaml", ".yml")):
            return json_data(_load_yaml(raw))
        return parse_json(raw)
    except ContractError as exc:
        raise ContractError(f"{path}: {exc.message}", code=exc.code, path=exc.path,
                            data=exc.data) from None


def load_contract_or_schema(path: str) -> ToolSpec | dict[str, Any]:
    """A contract (any contract key present) or a bare schema (compiled to prove it is one).

    Errors name the file: ToolkeeperError with the underlying code, path and data.
    """
    try:
        document = read_document(path)
        if isinstance(document, dict) and any(key in document for key in CONTRACT_KEYS):
            return spec_from_mapping(document)
        if not isinstance(document, dict):
            raise ToolkeeperError("a schema or contract must be a JSON object",
                                  code="schema.invalid", path="$")
        compile_schema(document)
        return document
    except ToolkeeperError as exc:
        message = exc.message if path in exc.message else f"{path}: {exc.message}"
        raise ToolkeeperError(message, code=exc.code, path=exc.path, data=exc.data) from None
