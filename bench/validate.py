"""Per-call validation cost: toolkeeper (jsonschema-rs + our policy) against the `jsonschema`
package measured in the same run, for valid and invalid, small and medium arguments.

Three rows per case, each side on a schema compiled once: ``is_valid_json`` (the boolean
fast path the gateway takes for arguments its strict JSON decoder produced: ours is
``CompiledSchema.is_valid_json``, theirs ``Validator.is_valid``), ``is_valid`` (ours adds a walk
that refuses what is not JSON data, such as NaN, which ``jsonschema`` accepts as a number) and
``errors`` (the full sorted error list, empty when valid: ours is ``CompiledSchema.errors``,
theirs ``list(Validator.iter_errors(...))``).
Run: ``python bench/validate.py`` (``--quick`` for a short smoke run).
"""

from __future__ import annotations

import argparse
import sys
import timeit
from typing import Any

import jsonschema

from toolkeeper.contracts.validate import compile_schema

SMALL = {
    "type": "object",
    "properties": {
        "reference": {"type": "string", "pattern": "^PMT-\\d{3,}$"},
        "include_legs": {"type": "boolean", "default": False},
    },
    "required": ["reference"],
    "additionalProperties": False,
}
SMALL_VALID = {"reference": "PMT-771", "include_legs": True}
SMALL_INVALID = {"reference": "PMT771", "include_legs": "yes", "urgent": True}

_LINE = {
    "type": "object",
    "properties": {
        "sku": {"type": "string", "minLength": 3, "maxLength": 32},
        "qty": {"type": "integer", "minimum": 1, "maximum": 1000},
        "price": {"type": "number", "exclusiveMinimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    },
    "required": ["sku", "qty", "price"],
    "additionalProperties": False,
}
MEDIUM = {
    "type": "object",
    "$defs": {"line": _LINE},
    "properties": {
        "order_id": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
        "customer": {"type": "object", "properties": {
            "id": {"type": "integer"}, "email": {"type": "string"},
            "tier": {"enum": ["gold", "silver", "bronze"]}}, "required": ["id"]},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}, "minItems": 1},
        "notes": {"type": ["string", "null"], "maxLength": 500},
        "priority": {"type": "integer", "minimum": 0, "maximum": 9, "default": 5},
    },
    "required": ["order_id", "customer", "lines"],
    "additionalProperties": False,
}
MEDIUM_VALID = {
    "order_id": "ORD-123456",
    "customer": {"id": 42, "email": "a@example.com", "tier": "gold"},
    "lines": [{"sku": f"SKU-{i}", "qty": i + 1, "price": 9.5 + i, "tags": ["a", "b"]}
              for i in range(20)],
    "notes": None,
    "priority": 3,
}
MEDIUM_INVALID = {
    "order_id": "ORD-12",
    "customer": {"id": "42", "tier": "platinum"},
    "lines": [{"sku": "S", "qty": 0, "price": -1, "tags": [1]}] * 5 + [{"sku": "SKU-1"}],
    "notes": 7,
    "priority": 3.0,
    "extra": True,
}

CASES: list[tuple[str, dict[str, Any], Any, bool]] = [
    ("small/valid", SMALL, SMALL_VALID, True),
    ("small/invalid", SMALL, SMALL_INVALID, False),
    ("medium/valid", MEDIUM, MEDIUM_VALID, True),
    ("medium/invalid", MEDIUM, MEDIUM_INVALID, False),
]


def _per_call(fn: Any, budget: float) -> float:
    """Seconds per call: calibrate a loop count for ~budget seconds, best of 5 repeats."""
    number, _ = timeit.Timer(fn).autorange()
    number = max(1, int(number * budget / 0.2))
    return min(timeit.Timer(fn).repeat(repeat=5, number=number)) / number


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="short run (smoke test)")
    args = parser.parse_args()
    budget = 0.05 if args.quick else 0.4
    print(f"{'case':<16}{'api':<15}{'toolkeeper':>14}{'jsonschema':>14}{'speedup':>10}")
    for name, schema, instance, valid in CASES:
        ours = compile_schema(schema)
        theirs = jsonschema.Draft202012Validator(schema)
        assert (ours.errors(instance) == []) is valid and ours.is_valid(instance) is valid
        assert (not list(theirs.iter_errors(instance))) is valid
        assert theirs.is_valid(instance) is valid
        assert ours.is_valid_json(instance) is valid
        rows = [
            ("is_valid_json", ours.is_valid_json, theirs.is_valid),
            ("is_valid", ours.is_valid, theirs.is_valid),
            ("errors", ours.errors, lambda i, t=theirs: list(t.iter_errors(i))),
        ]
        for api, mine, other in rows:
            t_ours = _per_call(lambda f=mine, i=instance: f(i), budget)
            t_theirs = _per_call(lambda f=other, i=instance: f(i), budget)
            print(f"{name:<16}{api:<15}{t_ours * 1e6:>11.2f} us{t_theirs * 1e6:>11.2f} us"
                  f"{t_theirs / t_ours:>9.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
