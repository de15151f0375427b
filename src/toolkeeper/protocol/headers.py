"""HTTP header facts for the modern ladder: a case-insensitive view that keeps duplicates, the
strict ``=?base64?...?=`` value codec (mcp-wire 4.2), and the routing and ``Mcp-Param-*``
integrity checks (mcp-wire 4.1, 4.3, 4.4 rows 9 and 11-15).

Names are case-insensitive, values case-sensitive. ``MCP-Protocol-Version`` and ``Mcp-Method``
are compared raw; ``Mcp-Name`` and ``Mcp-Param-*`` are decoded first. A raw value that could
not have survived an HTTP field round-trip (non-ASCII, control characters, edge whitespace) is
treated as undecodable, so it never matches the body even when the body holds the same
characters (SPEC 3.2).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.contracts.headers import iter_x_mcp_headers
from toolkeeper.protocol.faults import header_mismatch

__all__ = [
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PARAM_PREFIX",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "NAME_PARAMS",
    "HeaderView",
    "check_param_headers",
    "check_routing_headers",
    "check_unique_routing_headers",
    "decode_header_value",
    "encode_header_value",
    "is_plain_header_value",
    "param_headers",
]

MCP_PROTOCOL_VERSION: Final = "mcp-protocol-version"
MCP_METHOD: Final = "mcp-method"
MCP_NAME: Final = "mcp-name"
MCP_SESSION_ID: Final = "mcp-session-id"
MCP_PARAM_PREFIX: Final = "mcp-param-"
_ROUTING: Final = (MCP_PROTOCOL_VERSION, MCP_METHOD, MCP_NAME)

NAME_PARAMS: Final[Mapping[str, str]] = MappingProxyType({
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
})
"""Method -> the params key mirrored by ``Mcp-Name``."""

_SENTINEL_HEAD: Final = "=?base64?"
_SENTINEL_TAIL: Final = "?="


def _sentinel_payload(value: str) -> str | None:
    """The payload of ``=?base64?<payload>?=`` (any characters), or None if not that shape."""
    if (len(value) >= len(_SENTINEL_HEAD) + len(_SENTINEL_TAIL)
            and value.startswith(_SENTINEL_HEAD) and value.endswith(_SENTINEL_TAIL)):
        return value[len(_SENTINEL_HEAD):-len(_SENTINEL_TAIL)]
    return None


_NAMES: Final[dict[bytes, str]] = {}
"""Raw ASGI header name -> its lowercase text, for the names seen first (a bounded memo: a
request decodes every header name, and real traffic uses a handful of them)."""
_NAMES_MAX: Final = 512

_RAW_KEYS: Final[dict[str, bytes]] = {}
"""ASCII header name asked for -> its lowercase bytes, the key of a raw index (a bounded memo:
the server asks for a handful of names)."""

_Index = tuple[dict[str, str], frozenset[str]]
_NO_REPEATS: Final[frozenset[str]] = frozenset()


def _header_name(raw: str | bytes) -> str:
    if not isinstance(raw, bytes):
        return raw.lower()
    name = _NAMES.get(raw)
    if name is None:
        name = raw.decode("latin-1").lower()
        if len(_NAMES) < _NAMES_MAX:
            _NAMES[raw] = name
    return name


def _repeated_names(pairs: tuple[tuple[str, str], ...]) -> frozenset[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for name, _ in pairs:
        (repeated if name in seen else seen).add(name)
    return frozenset(repeated)


class HeaderView:
    """Request headers as received: ``(lowercase name, value)`` pairs in order (immutable).

    Lookups go through an index built once per view (name -> first value, and the names that
    appear more than once); only a repeated name is looked up by scanning the pairs. A view
    made by :meth:`deferred` keeps the server's raw ASGI pairs and decodes them (as
    :meth:`from_asgi` does) only when first read: the express lane reads its few headers
    straight from the raw pairs, and most requests never need the rest."""

    __slots__ = ("_index", "_pairs", "_raw", "_raw_index")

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        self._pairs: tuple[tuple[str, str], ...] | None = tuple(pairs)
        self._index: _Index | None = None
        self._raw: Sequence[tuple[bytes, bytes]] | None = None
        self._raw_index: Mapping[bytes, bytes] | None = None

    @classmethod
    def _indexed(cls, out: tuple[tuple[str, str], ...]) -> HeaderView:
        view = object.__new__(cls)
        view._pairs = out
        view._index = _index_of(out)
        view._raw = None
        view._raw_index = None
        return view

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str | bytes, str | bytes]]) -> HeaderView:
        """Build from ASGI byte pairs (decoded as Latin-1, as HTTP does) or from strings."""
        return cls._indexed(_decode_pairs(pairs))

    @classmethod
    def from_asgi(cls, pairs: Iterable[tuple[bytes, bytes]]) -> HeaderView:
        """Build from ASGI byte pairs as a server received them: like :meth:`from_pairs`, and
        each value loses its leading and trailing optional whitespace (RFC 9110 5.5: spaces
        and tabs are not part of a field value; not every ASGI server's parser strips them),
        in the same pass."""
        return cls._indexed(_decode_asgi(pairs))

    @classmethod
    def deferred(cls, raw: Sequence[tuple[bytes, bytes]],
                 raw_index: Mapping[bytes, bytes] | None = None) -> HeaderView:
        """The view :meth:`from_asgi` would build of ``raw``, decoded on first read. ``raw``
        must not change afterwards (an ASGI scope's header list does not). ``raw_index``:
        its :func:`~toolkeeper.protocol.raw_headers.asgi_index`, when the caller made it:
        then :meth:`get` reads one value from it without decoding the rest (the names are
        lowercase and unrepeated, so the first value is the only one)."""
        view = object.__new__(cls)
        view._pairs = None
        view._index = None
        view._raw = raw
        view._raw_index = raw_index
        return view

    @classmethod
    def of(cls, mapping: Mapping[str, str]) -> HeaderView:
        return cls.from_pairs(mapping.items())

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        pairs = self._pairs
        if pairs is None:
            assert self._raw is not None
            pairs = _decode_asgi(self._raw)
            self._index = _index_of(pairs)  # idempotent: a racing reader builds the same
            self._pairs = pairs
        return pairs

    def _lookup(self) -> _Index:
        index = self._index
        if index is None:
            index = _index_of(self.pairs)
            self._index = index
        return index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HeaderView) and self.pairs == other.pairs

    def __hash__(self) -> int:
        return hash(self.pairs)

    def __repr__(self) -> str:
        return f"HeaderView(pairs={self.pairs!r})"

    def get(self, name: str) -> str | None:
        """The first value of a header, or None."""
        raw_index = self._raw_index
        if raw_index is not None and self._pairs is None:
            key = _RAW_KEYS.get(name)
            if key is None and name.isascii():
                key = name.lower().encode()
                if len(name) <= _MEMO_LENGTH and len(_RAW_KEYS) < _NAMES_MAX:
                    _RAW_KEYS[name] = key
            if key is not None:
                value = raw_index.get(key)
                return None if value is None else value.strip(b" \t").decode("latin-1")
        return self._lookup()[0].get(name.lower())

    def get_all(self, name: str) -> list[str]:
        key = name.lower()
        first, repeated = self._lookup()
        if key in repeated:
            return [v for n, v in self.pairs if n == key]
        value = first.get(key)
        return [] if value is None else [value]

    def repeats(self, name: str) -> bool:
        """Whether ``name`` appears more than once (free for a view with a raw index, which
        exists only when no name repeats)."""
        if self._raw_index is not None:
            return False
        return name.lower() in self._lookup()[1]

    @property
    def repeated(self) -> frozenset[str]:
        """The (lowercase) names that appear more than once."""
        return self._lookup()[1]

    def count(self, name: str) -> int:
        key = name.lower()
        first, repeated = self._lookup()
        if key in repeated:
            return sum(1 for n, _ in self.pairs if n == key)
        return 1 if key in first else 0


def _decode_pairs(pairs: Iterable[tuple[str | bytes, str | bytes]]
                  ) -> tuple[tuple[str, str], ...]:
    items = pairs if isinstance(pairs, list | tuple) else list(pairs)
    try:  # the common case: byte pairs whose names were all seen before
        return tuple([(_NAMES[n], v.decode("latin-1"))  # type: ignore[index, union-attr]
                      for n, v in items])
    except (KeyError, TypeError, AttributeError):
        return tuple([(_header_name(n), v.decode("latin-1") if isinstance(v, bytes) else v)
                      for n, v in items])


def _decode_asgi(pairs: Iterable[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    items = pairs if isinstance(pairs, list | tuple) else list(pairs)
    try:  # the common case: byte pairs whose names were all seen before
        return tuple([(_NAMES[n], v.strip(b" \t").decode("latin-1")) for n, v in items])
    except (KeyError, TypeError, AttributeError):
        return _decode_pairs([(n, v.strip(b" \t")) for n, v in items])


def _index_of(pairs: tuple[tuple[str, str], ...]) -> _Index:
    first = dict(reversed(pairs))  # the first value of each name wins
    return first, _NO_REPEATS if len(first) == len(pairs) else _repeated_names(pairs)


_PLAIN_VALUES: Final[set[str]] = set()
"""Header values seen that :func:`is_plain_header_value` accepts (a bounded memo of short
values: mostly the names of a server's tools)."""
_MEMO_LENGTH: Final = 64


def is_plain_header_value(value: str) -> bool:
    """A value that travels verbatim: safe printable ASCII without edge whitespace that does
    not look like the ``=?base64?`` sentinel (:func:`decode_header_value` returns it as is)."""
    if value in _PLAIN_VALUES:
        return True
    if not _is_safe(value) or _sentinel_payload(value) is not None:
        return False
    if len(value) <= _MEMO_LENGTH and len(_PLAIN_VALUES) < _NAMES_MAX:
        _PLAIN_VALUES.add(value)
    return True


def _is_safe(value: str) -> bool:
    # Printable ASCII (0x20-0x7e) without edge whitespace: for ASCII text, isprintable() is
    # exactly "no control character" (0x00-0x1f, 0x7f).
    return value.isascii() and value.isprintable() and value == value.strip()


def encode_header_value(value: str) -> str:
    """The header form of a value: verbatim when it is safe printable ASCII without edge
    whitespace that does not begin like the sentinel, else ``=?base64?<b64 of UTF-8>?=``."""
    if _is_safe(value) and not value.startswith(_SENTINEL_HEAD):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def decode_header_value(value: str | None) -> str | None:
    """Inverse of :func:`encode_header_value`; None for anything that cannot be decoded
    exactly: an unsafe raw value, invalid or non-canonical Base64, or invalid UTF-8. Markers
    are case-sensitive (``=?BASE64?...`` is a raw value, and a plain one), and a value without
    the closing ``?=`` is a literal (the official conformance suite, SEP-2243: "a value without
    the ?= suffix is literal, not Base64"; SPEC 3.2's "incomplete sentinel" is read as a
    complete-looking sentinel whose payload is not exact Base64)."""
    if value is None or not _is_safe(value):
        return None
    payload = _sentinel_payload(value)
    if payload is None:
        return value
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode("ascii") != payload:
        return None  # non-zero trailing bits: not the canonical encoding
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def check_unique_routing_headers(headers: HeaderView) -> None:
    """Row 9: a routing header given twice is refused even with identical values (first-copy
    and last-copy readers would disagree). Raises -32020."""
    repeated = headers._lookup()[1]
    if repeated:
        for name in _ROUTING:
            if name in repeated:
                raise header_mismatch(f"{name} header appears more than once")


def check_routing_headers(headers: HeaderView, method: str, params: Mapping[str, Any],
                          version: str) -> None:
    """Rows 11-13 of mcp-wire 4.4: the version header, the method header and (when the body
    value is non-null) ``Mcp-Name`` equal the body. Raises -32020. Version and method headers
    compare raw but must be safe values."""
    first, repeated = headers._lookup()
    if repeated:
        check_unique_routing_headers(headers)
    raw_version = first.get(MCP_PROTOCOL_VERSION)
    if raw_version is None or raw_version != version or not _is_safe(raw_version):
        raise header_mismatch(
            f"{MCP_PROTOCOL_VERSION} header does not match the request envelope's protocol version")
    raw_method = first.get(MCP_METHOD)
    if raw_method is None or raw_method != method or not _is_safe(raw_method):
        raise header_mismatch(f"{MCP_METHOD} header does not match the request body's method")
    key = NAME_PARAMS.get(method)
    if (key is not None and params.get(key) is not None
            and decode_header_value(first.get(MCP_NAME)) != params[key]):
        raise header_mismatch(
            f"{MCP_NAME} header does not match the request body's {key!r} parameter")


def _render(value: Any) -> str | None:
    """How a client mirrors an argument into a header (as the SDK's client does: numbers as
    Python writes them, ``42.0`` for a whole float); None when it has no header form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str | float):
        try:
            return str(value)
        except ValueError:  # an int past the interpreter's 4,300-digit conversion limit
            return None
    return None


_DECIMAL: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _matches(declared: str, value: Any, rendered: str, decoded: str) -> bool:
    """Integer-typed properties with a whole-number argument (``42`` or ``42.0``) compare
    numerically with a canonical decimal header (mcp-wire 4.3: ``42`` matches ``42.0``);
    everything else compares with the rendering."""
    if (declared == "integer" and (type(value) is int or (
            type(value) is float and value.is_integer())) and _DECIMAL.fullmatch(decoded)):
        whole, _, fraction = decoded.partition(".")
        return fraction.strip("0") == "" and int(whole) == value
    return decoded == rendered


def _at(arguments: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def param_headers(schema: dict[str, Any], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a client sends for these arguments (client side)."""
    out: dict[str, str] = {}
    for token, path, _ in iter_x_mcp_headers(schema):
        rendered = _render(_at(arguments, path))
        if rendered is not None:
            out[f"Mcp-Param-{token}"] = encode_header_value(rendered)
    return out


_Annotation = tuple[str, tuple[str, ...], str]
_ANNOTATIONS: Final[dict[int, tuple[dict[str, Any], list[_Annotation]]]] = {}
_ANNOTATIONS_MAX: Final = 4096


def _annotations(schema: dict[str, Any]) -> list[_Annotation]:
    """``iter_x_mcp_headers(schema)``, memoized per schema object: a contract's schema is an
    immutable value once published, and the server checks it on every call. The entry holds
    the schema itself, so its id cannot be reused while it is cached."""
    entry = _ANNOTATIONS.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    found = iter_x_mcp_headers(schema)
    if len(_ANNOTATIONS) >= _ANNOTATIONS_MAX:
        _ANNOTATIONS.clear()
    _ANNOTATIONS[id(schema)] = (schema, found)
    return found


def check_param_headers(headers: HeaderView, schema: dict[str, Any],
                        arguments: Mapping[str, Any]) -> None:
    """Row 15: every ``x-mcp-header`` property's header and argument agree (both absent, or
    equal after decoding; integers compare numerically). Unrecognised ``Mcp-Param-*`` headers
    are ignored; a recognised one given twice is refused. Raises -32020."""
    for token, path, declared in _annotations(schema):
        name = f"Mcp-Param-{token}"
        values = headers.get_all(name)
        argument = ".".join(path)
        if len(values) > 1:
            raise header_mismatch(f"{name} header appears more than once")
        raw = values[0] if values else None
        value = _at(arguments, path)
        rendered = None if value is None else _render(value)
        if rendered is None:
            if raw is not None:
                raise header_mismatch(
                    f"{name} header is present but the request body's {argument!r} argument "
                    "is absent or has no header form")
            continue
        if raw is None:
            raise header_mismatch(
                f"{name} header is missing but the request body's {argument!r} argument is present")
        decoded = decode_header_value(raw)
        if decoded is None or not _matches(declared, value, rendered, decoded):
            raise header_mismatch(
                f"{name} header does not match the request body's {argument!r} argument")
