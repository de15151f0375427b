"""The compatibility matrix (issue 23): one cell per spec revision x client x server x transport,
each with the negotiated revision, the live counts, the required cases passed, the expected
failures and the transcript digest, and the tier the cell reads under the official MCP SDK
tiering (:data:`TIERING`).

A cell comes from a **run record** (``schemas/matrix-run.schema.json``) or from the output of
``toolkeeper conformance run --json`` (a **report**, read as data: this package does not import
the harness). A report gives one cell per spec revision whose live cases ran: the revision of a
case is the first part of its citation's file (``2026-07-28/basic/...``), else the report's
``era``. Its client is the harness (:class:`Defaults`), its server the in-process demo gateway
(``app:toolkeeper-demo``: toolkeeper itself) or the target's label, its transport the target's
kind (a URL or the in-process app: ``streamable-http``; a command: ``stdio``); the negotiated
revision is the era decision's version for the era the run selected, and null for the other
revisions (the report does not record theirs). The harness has no expected failures: a report's
cell lists none. Its transcript digest is the SHA-256 of the report's canonical JSON (what
``Report.digest`` gives).

The refusals, ToolkeeperError (the CLI's exit 2): a file that is neither a valid run record nor a
report (``gate.matrix_run_invalid``, ``data.file`` and each error's JSON ``path``), two runs for
the same cell (``gate.matrix_duplicate_cell``, ``data.cell`` and both ``data.files``: the matrix
never picks one), a release decision that is not an object with a string ``outcome``
(``gate.matrix_decision_invalid``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.redaction import redact
from toolkeeper.contracts.validate import validate
from toolkeeper.errors import ToolkeeperError

__all__ = ["MATRIX_VERSION", "TIERING", "TRANSPORTS", "Defaults", "Party", "RunRecord",
           "build_matrix", "meets_tier_2", "read_runs", "run_schema", "tier_of"]

MATRIX_VERSION: Final = 1
"""The version of the matrix JSON's format (``version``)."""
TRANSPORTS: Final = ("streamable-http", "stdio", "sse")
TIERING: Final[dict[str, Any]] = {
    "source": "SEP-1730, the MCP SDK Tiering System: "
              "https://modelcontextprotocol.io/community/sdk-tiers",
    "specPath": "docs/specification/2025-11-25/changelog.mdx",
    "sourceText": "Conformance Tests: Tier 1 100% pass rate, Tier 2 80% pass rate, "
                  "Tier 3 No minimum",
    "thresholds": [{"tier": 1, "minPassPercent": 100}, {"tier": 2, "minPassPercent": 80},
                   {"tier": 3, "minPassPercent": None}],
    "counted": "the live cases at level MUST that ran (skips left out; an expected failure "
               "counts as a failure)",
    "unrated": "a cell where no such case ran: tier null",
}
"""How a cell's tier is read. The tiering's conformance row is the only one a run can measure
(its other rows are maintenance commitments); the spec's 2025-11-25 changelog names SEP-1730."""

_REVISION: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_COUNTS: Final = (("passed", "pass"), ("failed", "fail"), ("warned", "warn"), ("noted", "note"),
                  ("skipped", "skip"))
_DEMO_APP: Final = "app:toolkeeper-demo"
_REPORT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["target", "era", "eraDecision", "cases"],
    "properties": {
        "target": {"type": "string"},
        "era": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "eraDecision": {"type": ["object", "null"]},
        "live": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        "selfcheck": {"type": "object",
                      "additionalProperties": {"type": "integer", "minimum": 0}},
        "cases": {"type": "array", "items": {
            "type": "object", "required": ["name", "mode", "level", "outcome"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "mode": {"enum": ["live", "recorded"]},
                "level": {"type": ["string", "null"]},
                "outcome": {"enum": ["pass", "fail", "warn", "note", "skip"]},
                "citation": {"type": ["object", "null"],
                             "properties": {"file": {"type": "string"}}}}}},
    },
}
"""What the matrix reads of a ``conformance run --json`` report, and the counts it carries
(the matrix counts the cases itself; counts that are not counts mark a report that is not
one); other keys are left alone."""


@cache
def run_schema() -> dict[str, Any]:
    """The run record's JSON Schema (``toolkeeper/gate/schemas/matrix-run.schema.json``)."""
    text = resources.files("toolkeeper.gate").joinpath("schemas/matrix-run.schema.json") \
        .read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass(frozen=True, slots=True)
class Party:
    """A client or a server: its name and version (None: not recorded)."""

    name: str
    version: str | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}

    def shown(self) -> str:
        return self.name if self.version is None else f"{self.name} {self.version}"


@dataclass(frozen=True, slots=True)
class Defaults:
    """What a report does not say: the harness that ran it (``client``), and overrides of the
    server and transport read from its target (None: read them from the report)."""

    client: Party
    server: Party | None = None
    transport: str | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One cell's run."""

    spec_revision: str
    client: Party
    server: Party
    transport: str
    negotiated: str | None
    live: Mapping[str, int]
    required_passed: int
    required_total: int
    expected_failures: tuple[tuple[str, str], ...]
    transcript_digest: str

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        """The cell: revision, client, server and transport (a missing version sorts first)."""
        return (self.spec_revision, self.client.name, self.client.version or "",
                self.server.name, self.server.version or "", self.transport)

    @property
    def tier(self) -> int | None:
        return tier_of(self.required_passed, self.required_total)

    def to_json(self) -> dict[str, Any]:
        return {"version": MATRIX_VERSION, "specRevision": self.spec_revision,
                "client": self.client.to_json(), "server": self.server.to_json(),
                "transport": self.transport, "negotiatedRevision": self.negotiated,
                "live": dict(self.live),
                "required": {"passed": self.required_passed, "total": self.required_total},
                "expectedFailures": [{"case": case, "reason": reason}
                                     for case, reason in self.expected_failures],
                "transcriptDigest": self.transcript_digest}

    def cell_json(self) -> dict[str, Any]:
        cell = self.to_json()
        del cell["version"]
        cell["tier"] = self.tier
        return cell


def tier_of(passed: int, total: int) -> int | None:
    """1 when every one of ``total`` required cases passed, 2 at 80% or more (exact integer
    arithmetic: 4 of 5 is tier 2, 79 of 99 is not), else 3; None when none ran."""
    if total <= 0:
        return None
    if passed >= total:
        return 1
    return 2 if passed * 100 >= 80 * total else 3


def _invalid(file: str, errors: Sequence[Mapping[str, str]]) -> ToolkeeperError:
    first = errors[0]
    return ToolkeeperError(f"{file} is neither a run record nor a conformance report: "
                           f"{first['path']}: {first['message']}",
                           code="gate.matrix_run_invalid",
                           data={"file": file, "errors": [dict(e) for e in errors]})


def _party(value: Mapping[str, Any]) -> Party:
    return Party(value["name"], value["version"])


def _from_record(file: str, value: Mapping[str, Any]) -> RunRecord:
    issues = validate(run_schema(), value)
    if issues:
        raise _invalid(file, [issue.to_dict() for issue in issues])
    errors = []
    if value["required"]["passed"] > value["required"]["total"]:
        errors.append({"path": "$.required.passed", "keyword": "maximum",
                       "message": "more required cases passed than ran"})
    seen: set[str] = set()
    for index, entry in enumerate(value["expectedFailures"]):
        if entry["case"] in seen:
            errors.append({"path": f"$.expectedFailures[{index}].case", "keyword": "uniqueItems",
                           "message": "a case listed twice"})
        seen.add(entry["case"])
    if errors:
        raise _invalid(file, errors)
    return RunRecord(value["specRevision"], _party(value["client"]), _party(value["server"]),
                     value["transport"], value["negotiatedRevision"], dict(value["live"]),
                     value["required"]["passed"], value["required"]["total"],
                     tuple((e["case"], e["reason"]) for e in value["expectedFailures"]),
                     value["transcriptDigest"])


def _case_revision(case: Mapping[str, Any], era: str) -> str:
    citation = case.get("citation")
    head = str(citation.get("file", "")).split("/", 1)[0] if isinstance(citation, dict) else ""
    return head if _REVISION.fullmatch(head) else era


def _from_report(file: str, value: Mapping[str, Any], defaults: Defaults) -> list[RunRecord]:
    issues = validate(_REPORT_SCHEMA, value)
    if issues:
        raise _invalid(file, [issue.to_dict() for issue in issues])
    era, target = value["era"], value["target"]
    digest = "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
    decision = value["eraDecision"]
    negotiated = decision.get("version") if isinstance(decision, dict) else None
    by_revision: dict[str, list[Mapping[str, Any]]] = {era: []}
    for case in value["cases"]:
        if case["mode"] == "live":
            by_revision.setdefault(_case_revision(case, era), []).append(case)
    server = defaults.server or (defaults.client if target == _DEMO_APP else Party(target, None))
    transport = defaults.transport or (
        "streamable-http" if target == _DEMO_APP or target.startswith(("http://", "https://"))
        else "stdio")
    records = []
    for revision, cases in sorted(by_revision.items()):
        if revision != era and all(case["outcome"] == "skip" for case in cases):
            continue  # an era that did not run here (not selected, or not served)
        ran = [case for case in cases if case["level"] == "MUST" and case["outcome"] != "skip"]
        records.append(RunRecord(
            revision, defaults.client, server, transport,
            negotiated if revision == era and isinstance(negotiated, str) else None,
            {key: sum(1 for c in cases if c["outcome"] == outcome) for key, outcome in _COUNTS},
            sum(1 for case in ran if case["outcome"] == "pass"), len(ran), (), digest))
    return records


def read_runs(file: str, value: Any, defaults: Defaults) -> list[RunRecord]:
    """The cells of one file's JSON ``value``: a report (an object with ``cases``) gives one
    per revision that ran, a run record one."""
    if isinstance(value, dict) and "cases" in value:
        return _from_report(file, value, defaults)
    if not isinstance(value, dict):
        raise _invalid(file, [{"path": "$", "keyword": "type", "message": "not an object"}])
    return [_from_record(file, value)]


def _decision(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("outcome"), str):
        raise ToolkeeperError("a release decision is an object with a string outcome",
                              code="gate.matrix_decision_invalid",
                              data={"errors": [{"path": "$.outcome", "keyword": "required",
                                                "message": "no string outcome"}]})
    return value


def _summary(cells: Sequence[RunRecord]) -> dict[str, Any]:
    tiers = [cell.tier for cell in cells]
    out: dict[str, Any] = {"cells": len(cells), "tier1": tiers.count(1), "tier2": tiers.count(2),
                           "tier3": tiers.count(3), "unrated": tiers.count(None)}
    out["meetsTier2"] = bool(cells) and all(tier in (1, 2) for tier in tiers)
    return out


def build_matrix(runs: Sequence[tuple[str, Any]], defaults: Defaults,
                 decision: Any = None) -> dict[str, Any]:
    """The matrix of ``runs`` (each a file's name and its JSON), cells sorted by key, with the
    release decision beside it (None: none given) and the digest over the rest."""
    cells: dict[tuple[str, ...], tuple[str, RunRecord]] = {}
    for file, value in runs:
        for record in read_runs(file, value, defaults):
            if record.key in cells:
                first = cells[record.key][0]
                raise ToolkeeperError(
                    f"two runs for one cell: {first} and {file} ({record.spec_revision}, "
                    f"{record.client.shown()}, {record.server.shown()}, {record.transport})",
                    code="gate.matrix_duplicate_cell",
                    data={"cell": _cell_key(record), "files": [first, file]})
            cells[record.key] = (file, record)
    ordered = [cells[key][1] for key in sorted(cells)]
    body: dict[str, Any] = {
        "version": MATRIX_VERSION, "tiering": TIERING,
        "cells": [record.cell_json() for record in ordered], "summary": _summary(ordered),
        "decision": None if decision is None else _decision(decision)}
    body = redact(body)[0]
    body["digest"] = "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()
    return body


def _cell_key(record: RunRecord) -> dict[str, Any]:
    return {"specRevision": record.spec_revision, "client": record.client.to_json(),
            "server": record.server.to_json(), "transport": record.transport}


def meets_tier_2(matrix: Mapping[str, Any]) -> bool:
    """Whether every cell of a (non-empty) matrix reads tier 1 or 2."""
    return bool(matrix["summary"]["meetsTier2"])

