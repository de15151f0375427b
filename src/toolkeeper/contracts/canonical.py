"""Canonical JSON: sorted keys, compact, UTF-8, exact big integers (msgspec, never a float)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from toolkeeper.errors import ContractError

__all__ = ["SORTED_IN_C_BELOW", "canonical_json", "json_type_name", "key_sorted", "loads_json"]

_ENCODER = msgspec.json.Encoder(order="sorted")
_PLAIN = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()

SORTED_IN_C_BELOW: Final = 65536
"""The encoded size under which msgspec sorts the keys itself. msgspec 0.23's sort recurses
once per key on some orders (an object whose keys are sorted but for the first one): one
object of about 50,000 keys overflows the C stack and kills the process, and a request body
within the 4 MiB limit holds 300,000. Under this size no object can have 10,000 keys, which
it sorts safely in any order; a value this size or more is rebuilt with its keys ordered by
Python's sort (the same order: code points) and encoded as it stands."""


def canonical_json(value: Any) -> bytes:
    """Sorted-key compact JSON bytes; byte-identical for equal values."""
    if len(_PLAIN.encode(value)) < SORTED_IN_C_BELOW:
        return _ENCODER.encode(value)
    return _PLAIN.encode(key_sorted(value))


def key_sorted(value: Any) -> Any:
    """``value`` with every object (dict) rebuilt in key order, arrays walked, anything else
    as it is: what ``order="sorted"`` writes, without msgspec's sort."""
    if type(value) is dict:
        return {key: key_sorted(value[key]) for key in sorted(value)}
    if type(value) is list:
        return [key_sorted(item) for item in value]
    return value


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
