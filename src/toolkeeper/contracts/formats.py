"""Which ``format`` values a contract may assert (SPEC 1.2).

With ``assertFormats`` a format is a constraint, so it must be one the validator can check: an
unknown name would otherwise be ignored, and the contract would promise a check that never
runs. :func:`find_unknown_format` names the first such ``format`` (``schema.format_unknown``);
the validator's own list decides what is known (asked once per name, cached), so the two never
disagree. Without ``assertFormats`` a format is an annotation and any name is kept.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jsonschema_rs

from toolkeeper.contracts.json_values import link_parts
from toolkeeper.contracts.references import SchemaProblem, iter_schema_objects

__all__ = ["find_unknown_format"]


def find_unknown_format(schema: Any) -> SchemaProblem | None:
    """The first (in document order) ``format`` the validator cannot assert, or None. Objects
    under unknown keywords are not schemas here (``x-ui: {format: markdown}`` is data) unless
    a reference makes them one; then the validator itself refuses the name, without a path."""
    for link, node in iter_schema_objects(schema, unknown_keywords=False):
        name = node.get("format")
        if isinstance(name, str) and not _known(name):
            return SchemaProblem("schema.format_unknown", (*link_parts(link), "format"),
                                 f"format {name!r} is unknown to the validator: with "
                                 "assertFormats every format must be one it checks")
    return None


@lru_cache(maxsize=256)
def _known(name: str) -> bool:
    try:
        jsonschema_rs.Draft202012Validator({"format": name}, validate_formats=True,
                                           ignore_unknown_formats=False)
    except ValueError:
        return False
    return True
