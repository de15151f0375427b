"""Canonical JSON: sorted keys, compact, UTF-8, exact big integers (msgspec, never a float)."""

from __future__ import annotations

from typing import Any

import msgspec

from toolkeeper.errors import ContractError

__all__ = ["canonical_json", "json_type_name", "loads_json"]

_ENCODER = msgspec.json.Encoder(order="sorted")
_DECODER = msgspec.json.Decoder()


def canonical_json(value: Any) -> bytes:
    """Sorted-key compact JSON bytes; byte-identical for equal values."""
    return _ENCODER.encode(value)


def loads_json(data: bytes | str) -> Any:
    """Decode JSON keeping integers exact (2**70 stays an int). Bad JSON is a ContractError."""
    try:
        return _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ContractError(f"invalid JSON: {exc}", code="json.invalid") from None
    except RecursionError:
        raise ContractError("invalid JSON: nested too deeply", code="json.too_deep") from None
    except UnicodeEncodeError:  # text with lone surrogates (undecodable bytes in argv)
        raise ContractError("invalid JSON: not valid UTF-8", code="json.invalid") from None


_JSON_TYPES: dict[type, str] = {
    bool: "boolean", int: "integer", float: "number", str: "string",
    type(None): "null", list: "array", dict: "object",
}


def json_type_name(value: Any) -> str:
    """The JSON type of a decoded value (bool before int: bool subclasses int in Python)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)
