"""Request headers as an ASGI server hands them over (``(name, value)`` byte pairs), read
without decoding: what the express lanes of the HTTP transport and of the kernel look at.

:func:`asgi_index` accepts only pairs whose every header :class:`~toolkeeper.protocol.HeaderView`
would read the same way (lowercase ASCII names, each once, byte values); a lookup in it then
finds the value the view finds, before the view strips optional whitespace (see
:func:`header_text`). Anything else is None, and the caller takes the general path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from toolkeeper.protocol.headers import MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID

__all__ = ["RAW_METHOD", "RAW_NAME", "RAW_PROTOCOL_VERSION", "RAW_SESSION_ID", "asgi_index",
           "header_text"]

RAW_PROTOCOL_VERSION: Final = MCP_PROTOCOL_VERSION.encode()
RAW_METHOD: Final = MCP_METHOD.encode()
RAW_NAME: Final = MCP_NAME.encode()
RAW_SESSION_ID: Final = MCP_SESSION_ID.encode()

_LOWER_NAMES: Final[set[bytes]] = set()
"""Short raw header names seen that are lowercase ASCII (a bounded memo)."""
_BYTES_ONLY: Final = frozenset({bytes})
_MEMO_MAX: Final = 512
_MEMO_LENGTH: Final = 64


def asgi_index(raw: Sequence[tuple[bytes, bytes]]) -> dict[bytes, bytes] | None:
    """Raw ASGI pairs as a dict (name -> raw value), when every name is lowercase ASCII bytes
    and appears once and every value is bytes; None otherwise (a repeated name, a name in
    another letter case or outside ASCII, which the view's Latin-1 folding could merge with
    another, anything that is not a byte pair)."""
    try:
        index = dict(raw)
        if len(index) != len(raw):
            return None
    except (TypeError, ValueError):
        return None
    if not _BYTES_ONLY.issuperset(map(type, index.values())):  # the loop in C
        return None
    if _LOWER_NAMES.issuperset(index):
        return index
    for name in index.keys() - _LOWER_NAMES:
        if type(name) is not bytes or not name.isascii() or name != name.lower():
            return None
        if len(name) <= _MEMO_LENGTH and len(_LOWER_NAMES) < _MEMO_MAX:
            _LOWER_NAMES.add(name)
    return index


def header_text(raw: bytes) -> str:
    """A raw header value as :class:`~toolkeeper.protocol.HeaderView` holds it (optional
    whitespace stripped, Latin-1)."""
    return raw.strip(b" \t").decode("latin-1")
