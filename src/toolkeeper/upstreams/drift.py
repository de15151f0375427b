"""Drift: how a tool an upstream serves now differs from the contract in force, and whether a
sync may publish it or must quarantine it.

:func:`classify_drift` compares the contract in force with the one the new descriptor makes,
through the registry's classifier (the publish guard's own judgement, so the level found is the
bump the guard will ask for), and compares the two descriptors for what the classifier does not
see. The result, a :class:`Drift`, carries:

* ``level``: the classifier's bump for the whole change (``major``, ``minor``, ``patch``): the
  next version is published at that level;
* ``classes``: the drift classes a policy decides (:data:`~toolkeeper.upstreams.model.
  DRIFT_CLASSES`): the level of the schema changes (``major``, ``minor``, or ``patch`` for a
  schema that changed in a way that breaks nothing) and ``descriptive`` (the title, the
  description, the annotations, ``_meta`` or a policy field the annotations raise), plus
  :data:`RISK_LOWERED` when the annotations lower the declared risk (``destructiveHint`` true to
  false or absent, ``readOnlyHint`` false or absent to true): such a drift is quarantined
  whatever the policy says;
* ``changes``: the classifier's changes and the descriptor rules (:data:`DRIFT_RULES`), each
  ``{"rule", "path"}``, sorted by (rule, path);
* ``description_diff``: a unified diff of the description, for the operator;
* ``new_digest``: the new descriptor's digest (what ``approve --digest`` names).

A drift is quarantined (:meth:`Drift.quarantined`) when it lowers the risk or when the policy
quarantines any one of its classes.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.registry.guard import Classifier
from toolkeeper.upstreams.descriptor import descriptor_digest
from toolkeeper.upstreams.model import DriftPolicy

__all__ = ["DRIFT_RULES", "RISK_LOWERED", "Drift", "classify_drift", "description_diff",
           "next_version"]

RISK_LOWERED = "risk_lowered"
"""The drift class of an annotation change that lowers the declared risk (never published
without an operator)."""

DRIFT_RULES: Mapping[str, str] = MappingProxyType({
    "upstream.annotation.changed": "an annotation the upstream serves changed",
    "upstream.risk_lowered": "an annotation now declares less risk (destructiveHint true to "
                             "false or absent, readOnlyHint false or absent to true)",
    "upstream.meta.changed": "the upstream's _meta for the tool changed",
    "upstream.schema.rewritten": "a schema changed in a way the classifier finds harmless",
})
"""The descriptor rules a drift reports beside the classifier's (stable ids)."""

_SCHEMA_PATHS = ("$.inputSchema", "$.outputSchema")
_SCHEMA_KEYS = ("inputSchema", "outputSchema")
_LEVELS: Mapping[Bump, str] = MappingProxyType({b: b.value for b in Bump})


@dataclass(frozen=True, slots=True)
class Drift:
    """One classified drift (see the module docstring)."""

    level: str
    classes: tuple[str, ...]
    changes: tuple[Mapping[str, str], ...]
    description_diff: str
    new_digest: str

    def quarantined(self, policy: DriftPolicy) -> bool:
        """Whether a sync must keep the contract in force and wait for an operator."""
        return any(c == RISK_LOWERED or policy.action(c) == "quarantine" for c in self.classes)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "classes": list(self.classes),
                "changes": [dict(c) for c in self.changes],
                "descriptionDiff": self.description_diff, "newDigest": self.new_digest}


def next_version(in_force: Version, level: str) -> Version:
    """The version a drift of ``level`` is published as, after the one in force."""
    bump = {"major": in_force.bump_major, "minor": in_force.bump_minor,
            "patch": in_force.bump_patch}[level]
    return bump()


def _meta_claims(descriptor: Mapping[str, Any]) -> Any:
    """The descriptor's ``_meta`` less the version it claims (``schemaVersion``, FastMCP's
    ``fastmcp.version``): a new version claimed beside a schema change is not a descriptive
    change of its own (the digest still covers it)."""
    meta = descriptor.get("_meta")
    if not isinstance(meta, Mapping):
        return meta
    out = {key: value for key, value in meta.items() if key != "schemaVersion"}
    fastmcp = out.get("fastmcp")
    if isinstance(fastmcp, Mapping):
        rest = {key: value for key, value in fastmcp.items() if key != "version"}
        if rest:
            out["fastmcp"] = rest
        else:
            del out["fastmcp"]
    return out or None


def _flag(annotations: Mapping[str, Any], key: str) -> bool:
    return annotations.get(key) is True


def _annotation_changes(before: Mapping[str, Any], after: Mapping[str, Any]
                        ) -> tuple[list[dict[str, str]], bool]:
    a = before.get("annotations") if isinstance(before.get("annotations"), Mapping) else {}
    b = after.get("annotations") if isinstance(after.get("annotations"), Mapping) else {}
    assert isinstance(a, Mapping) and isinstance(b, Mapping)
    changes = [{"rule": "upstream.annotation.changed", "path": f"$.annotations.{key}"}
               for key in sorted(set(a) | set(b), key=str) if a.get(key) != b.get(key)]
    lowered = False
    if _flag(a, "destructiveHint") and not _flag(b, "destructiveHint"):
        changes.append({"rule": "upstream.risk_lowered", "path": "$.annotations.destructiveHint"})
        lowered = True
    if not _flag(a, "readOnlyHint") and _flag(b, "readOnlyHint"):
        changes.append({"rule": "upstream.risk_lowered", "path": "$.annotations.readOnlyHint"})
        lowered = True
    return changes, lowered


def description_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A unified diff of the two descriptors' descriptions ("" when they are the same)."""
    old, new = before.get("description"), after.get("description")
    old_text = old if isinstance(old, str) else ""
    new_text = new if isinstance(new, str) else ""
    if old_text == new_text:
        return ""
    lines = difflib.unified_diff(old_text.splitlines(keepends=True),
                                 new_text.splitlines(keepends=True),
                                 fromfile="description (in force)",
                                 tofile="description (upstream)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _schema_class(verdict: Verdict, before: Mapping[str, Any], after: Mapping[str, Any],
                  changes: list[dict[str, str]]) -> str | None:
    found = [c.bump for c in verdict.changes if c.path.startswith(_SCHEMA_PATHS)]
    if found:
        return _LEVELS[max(found, key=lambda b: b.rank)]
    if any(before.get(key) != after.get(key) for key in _SCHEMA_KEYS):
        changes.append({"rule": "upstream.schema.rewritten", "path": "$.inputSchema"
                        if before.get("inputSchema") != after.get("inputSchema")
                        else "$.outputSchema"})
        return "patch"
    return None


def classify_drift(in_force: ToolSpec, candidate: ToolSpec, before: Mapping[str, Any],
                   after: Mapping[str, Any], classify: Classifier) -> Drift:
    """The drift from the contract ``in_force`` (made from descriptor ``before``) to
    ``candidate`` (made from descriptor ``after``), ``classify`` being the registry's
    classifier (the guard's)."""
    verdict = classify(in_force, candidate)
    changes = [{"rule": c.rule, "path": c.path} for c in verdict.changes]
    annotation_changes, lowered = _annotation_changes(before, after)
    changes += annotation_changes
    meta_changed = _meta_claims(before) != _meta_claims(after)
    if meta_changed:
        changes.append({"rule": "upstream.meta.changed", "path": "$._meta"})
    classes: set[str] = set()
    schema_class = _schema_class(verdict, before, after, changes)
    if schema_class is not None:
        classes.add(schema_class)
    if annotation_changes or meta_changed or any(
            not c.path.startswith(_SCHEMA_PATHS) for c in verdict.changes):
        classes.add("descriptive")
    if lowered:
        classes.add(RISK_LOWERED)
    if not classes:  # the digest moved in a way nothing above names: an operator looks,
        unclaimed = {**before, "_meta": _meta_claims(before)}  # unless only the version
        classes.add("descriptive" if unclaimed != {**after, "_meta": _meta_claims(after)}
                    else "patch")  # claimed moved (published as a patch by default)
    unique = {(c["rule"], c["path"]) for c in changes}
    return Drift(_LEVELS[verdict.bump], tuple(sorted(classes)),
                 tuple({"rule": r, "path": p} for r, p in sorted(unique)),
                 description_diff(before, after), descriptor_digest(after))
