"""Client capability checks: does a declared ``ClientCapabilities`` object cover a requirement?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["missing_capabilities"]


def missing_capabilities(required: Mapping[str, Any], declared: Mapping[str, Any]
                         ) -> dict[str, Any]:
    """The part of ``required`` that ``declared`` lacks (empty when covered). A key is covered
    when the client declared it as an object; nested requirements (``{"elicitation": {"url":
    {}}}``, ``{"extensions": {"<id>": {}}}``) are checked key by key."""
    missing: dict[str, Any] = {}
    for key in sorted(required):
        want = required[key]
        have = declared.get(key)
        if not isinstance(have, dict):
            missing[key] = want
        elif isinstance(want, dict) and want:
            inner = missing_capabilities(want, have)
            if inner:
                missing[key] = inner
    return missing
