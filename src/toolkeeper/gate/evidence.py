"""The evidence bundle's digests (issue 23): every section is kept as its redacted JSON and the
SHA-256 of that JSON's canonical bytes, and the bundle carries the SHA-256 over the sections'
digests by name. Redaction comes first (the gateway's one
:func:`~toolkeeper.contracts.redaction.redact`), so no secret is hashed or kept, and two runs
that differ only in a secret's value have the same digest. The digests are a pure function of
the redacted evidence: the same across runs, processes and machines, and different when any
byte of it differs.

:func:`verify_bundle` recomputes every digest and refuses, with its path: a section whose digest
does not match its content, or that is malformed (``evidence.digest_mismatch``,
``evidence.malformed``), content holding what redaction would mask (``evidence.unredacted``),
an unknown or missing section, and a bundle digest that does not match
its sections' (``evidence.digest_mismatch`` at ``$.digest``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.redaction import redact
from toolkeeper.errors import ToolkeeperError

__all__ = ["SECTIONS", "bundle", "section_digest", "verify_bundle"]

SECTIONS: Final = ("healthWindows", "policy", "proxyEvidence", "rollbackEvidence", "sdkDiffs",
                   "transcripts")
"""Every section a bundle holds, in name order."""
_SHA256: Final = re.compile(r"sha256:[0-9a-f]{64}")


def section_digest(content: Any) -> str:
    """``sha256:`` and the hex SHA-256 of the canonical JSON of ``content`` (already redacted)."""
    return "sha256:" + hashlib.sha256(canonical_json(content)).hexdigest()


def _bundle_digest(digests: Mapping[str, str]) -> str:
    return section_digest(dict(sorted(digests.items())))


def bundle(sections: Mapping[str, Any]) -> dict[str, Any]:
    """The bundle of ``sections`` (each of :data:`SECTIONS`, a JSON value), each redacted and
    digested, with the digest over all of them (ToolkeeperError ``evidence.malformed`` for a
    section missing or unknown)."""
    names = set(sections)
    if names != set(SECTIONS):
        odd = sorted(names ^ set(SECTIONS))
        raise ToolkeeperError(f"an evidence bundle holds exactly {', '.join(SECTIONS)}; "
                              f"{', '.join(odd)} is missing or unknown",
                              code="evidence.malformed", data={"sections": odd})
    kept = {}
    for name in SECTIONS:
        content, _ = redact(sections[name])
        kept[name] = {"digest": section_digest(content), "content": content}
    return {"sections": kept,
            "digest": _bundle_digest({name: kept[name]["digest"] for name in SECTIONS})}


def verify_bundle(value: Any) -> list[dict[str, str]]:
    """Every refusal of ``value`` as a bundle, sorted by path; empty: every digest holds."""
    sections = value.get("sections") if isinstance(value, dict) else None
    if not isinstance(sections, dict):
        return [{"code": "evidence.malformed", "path": "$.sections"}]
    found: list[tuple[str, str]] = []
    digests: dict[str, str] = {}
    for name in sorted(set(sections) | set(SECTIONS)):
        path, kept = f"$.sections.{name}", sections.get(name)
        if name not in SECTIONS or not isinstance(kept, dict) or set(kept) != {
                "digest", "content"} or not isinstance(kept["digest"], str) \
                or not _SHA256.fullmatch(kept["digest"]):
            found.append(("evidence.malformed", path))
            continue
        digests[name] = kept["digest"]
        if section_digest(kept["content"]) != kept["digest"]:
            found.append(("evidence.digest_mismatch", f"{path}.digest"))
        if redact(kept["content"])[0] != kept["content"]:  # redaction would still mask
            found.append(("evidence.unredacted", f"{path}.content"))
    if not found and value.get("digest") != _bundle_digest(digests):
        found.append(("evidence.digest_mismatch", "$.digest"))
    return [{"code": code, "path": path} for path, code in sorted((p, c) for c, p in found)]
