"""What an SDK did to an answer (SPEC 5.4), sans-IO: the wire's JSON-RPC response beside the
SDK's normalized value or exception, as :class:`Change` values with a kind and a JSON path.

The kinds are the policy file's (``sdk_diff_policy.json``): a field the SDK dropped is an
*accounted removal* when its name is wire bookkeeping, else *semantic loss*; a field only the
SDK's value has is *synthesized*, or *promoted* when it holds what a dropped field held; a
field in both with another value is *changed*. Beside those, how the SDK answered as a whole:
*rejected* (it raised on a valid answer), *accepted_invalid* (it handed back a value for an
answer the era refuses) and *error_changed* (the origin's error came back as another code, or
as a value). A change carries paths only, never a value: it is written as evidence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["KINDS", "Change", "diff_outcome", "expected_projection"]

KINDS: Final = ("accepted_invalid", "accounted_removal", "changed", "error_changed",
                "promoted", "rejected", "semantic_loss", "synthesized")


@dataclass(frozen=True)
class Change:
    """One difference: its ``kind`` (a row of the policy), the JSON ``path`` in the SDK's view
    and, for a promotion, the wire path it came ``source``."""

    kind: str
    path: str
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "path": self.path}
        if self.source is not None:
            out["from"] = self.source
        return out


class _Missing:
    """A key one side lacks."""


def _walk(wire: Any, sdk: Any, path: str, accounted: frozenset[str]
          ) -> Iterator[tuple[str, str, Any]]:
    """``(kind, path, value)`` for every leaf difference; ``value`` is the dropped or added
    value (kept in memory only, to pair promotions)."""
    if isinstance(wire, dict) and isinstance(sdk, dict):
        for key in sorted(wire.keys() | sdk.keys()):
            here = f"{path}.{key}"
            if key not in sdk:
                yield ("accounted_removal" if key in accounted else "semantic_loss",
                       here, wire[key])
            elif key not in wire:
                yield "synthesized", here, sdk[key]
            else:
                yield from _walk(wire[key], sdk[key], here, accounted)
    elif isinstance(wire, list) and isinstance(sdk, list) and len(wire) == len(sdk):
        for index, (w, s) in enumerate(zip(wire, sdk, strict=True)):
            yield from _walk(w, s, f"{path}[{index}]", accounted)
    elif type(wire) is not type(sdk) or wire != sdk:
        yield "changed", path, None


def _value_changes(wire: Any, sdk: Any, accounted: frozenset[str]) -> list[Change]:
    found = list(_walk(wire, sdk, "$", accounted))
    dropped = [(path, value) for kind, path, value in found
               if kind in ("accounted_removal", "semantic_loss")]
    changes: list[Change] = []
    for kind, path, value in found:
        if kind == "synthesized":
            source = next((p for p, v in dropped if v == value and value not in (None, {}, [])),
                          None)
            if source is not None:
                changes.append(Change("promoted", path, source))
                continue
        changes.append(Change(kind, path))
    return changes


def expected_projection(response: Any, accounted: frozenset[str]) -> dict[str, Any]:
    """What an application of the era should get from ``response`` (the JSON-RPC message):
    a ``value`` (the result, bookkeeping left out at the top) or an ``exception`` carrying the
    error's ``code``."""
    if isinstance(response, dict) and isinstance(response.get("error"), dict):
        return {"outcome": "exception", "code": response["error"].get("code")}
    result = response.get("result") if isinstance(response, dict) else None
    if not isinstance(result, dict):
        return {"outcome": "exception", "code": None}
    return {"outcome": "value",
            "projection": {k: v for k, v in result.items() if k not in accounted}}


def diff_outcome(response: Any, valid: bool, normalized: Mapping[str, Any],
                 accounted: frozenset[str]) -> tuple[Change, ...]:
    """The changes between the wire ``response`` (``valid``: the era accepts it as an answer)
    and the SDK's ``normalized`` outcome (``{"outcome": "value", "value": ...}`` or
    ``{"outcome": "exception", "exception": {"code": ...}}``)."""
    error = response.get("error") if isinstance(response, dict) else None
    result = response.get("result") if isinstance(response, dict) else None
    raised = normalized.get("outcome") != "value"
    if isinstance(error, dict):
        code = (normalized.get("exception") or {}).get("code") if raised else None
        return () if raised and code == error.get("code") else (Change("error_changed", "$"),)
    if raised:
        return () if not valid else (Change("rejected", "$"),)
    changes = _value_changes(result, normalized.get("value"), accounted)
    return tuple(changes) if valid else (Change("accepted_invalid", "$"), *changes)
