"""Transcripts (SPEC 5.3): what crosses the boundary in one exchange, and what must come back.

A transcript is a JSON file validated by ``transcript.schema.json`` (package data beside this
module) and read into the typed values below. Its on-disk form is canonical: the value written
with sorted keys, two-space indentation, UTF-8 and one trailing newline (:func:`canonical_text`),
so a change to a fixture is a reviewable diff and two writers never disagree on bytes; a file
in any other form is refused (``conformance.not_canonical``), as is one the schema or the
cross-field rules refuse (``conformance.transcript_invalid``, ``data.path`` names the place).

Two modes. A *live* transcript is sent to the target and its answer judged. A *recorded* one
holds the answer a faulty peer or intermediary sent (``response``) and is judged as received:
it pins what the judgment must find in an answer no correct server produces, so every target
reports it the same way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Final

import jsonschema_rs

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.errors import ConformanceError, ContractError
from toolkeeper.protocol.versions import Era, era_of

__all__ = [
    "ABSENT",
    "LEVELS",
    "Citation",
    "Expectation",
    "Recorded",
    "RequestShape",
    "Transcript",
    "TransportLevel",
    "canonical_text",
    "parse_transcript",
    "transcript_schema",
]

ABSENT: Final[Any] = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()
"""An expectation or a recorded field the transcript leaves out."""

_PAIR_RULES: Final = (("golden", "accepted"), ("negative", "rejected"))


def canonical_text(value: Any) -> str:
    """The one on-disk form of a transcript value."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


@cache
def transcript_schema() -> dict[str, Any]:
    """The transcript JSON Schema (package data)."""
    text = resources.files("toolkeeper.conformance").joinpath(
        "transcript.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Any:
    return jsonschema_rs.validator_for(transcript_schema())


@dataclass(frozen=True)
class Expectation:
    """What must come back: the outcome, the rejection boundary and code, and optionally the
    HTTP status, headers, a body pattern and ordered event patterns."""

    outcome: str
    boundary: str | None = None
    code: int | str | None = None
    answer: str = "response"
    status: int | Any | None = ABSENT
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = ABSENT
    events: tuple[Any, ...] | None = None
    null_id: bool = False
    stream: str = "any"

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Expectation:
        events = value.get("events")
        return cls(value["outcome"], value.get("boundary"), value.get("code"),
                   value.get("answer", "response"), value.get("status", ABSENT),
                   dict(value.get("headers", {})), value.get("body", ABSENT),
                   None if events is None else tuple(events), bool(value.get("nullId")),
                   value.get("stream", "any"))


@dataclass(frozen=True)
class RequestShape:
    """What the runner sends: the HTTP method, headers as ordered pairs (a repeated name is
    a duplicated header), and the JSON body or the exact text of a malformed one."""

    http_method: str
    headers: tuple[tuple[str, str], ...]
    body: Any = ABSENT
    raw: str | None = None

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> RequestShape:
        pairs: list[tuple[str, str]] = []
        for name, given in value.get("headers", {}).items():
            pairs.extend((name, v) for v in ([given] if isinstance(given, str) else given))
        return cls(value.get("httpMethod", "POST"), tuple(pairs), value.get("body", ABSENT),
                   value.get("raw"))


@dataclass(frozen=True)
class Recorded:
    """The answer a recorded transcript holds."""

    status: int | None
    headers: Mapping[str, str]
    body: Any
    raw: str | None
    events: tuple[Any, ...] | None
    reads: tuple[int, ...]
    ended: bool

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Recorded:
        events = value.get("events")
        return cls(value.get("status"), dict(value.get("headers", {})),
                   value.get("body", ABSENT), value.get("raw"),
                   None if events is None else tuple(events), tuple(value.get("reads", ())),
                   bool(value.get("ended", True)))


LEVELS: Final = ("MUST", "SHOULD", "reference")
"""The spec's word for a requirement, strongest first: broken, a MUST is a ``fail``, a SHOULD a
``warn`` and a reference behaviour (what the official SDK does beyond the text) a ``note``."""


@dataclass(frozen=True)
class Citation:
    """Where a requirement is written: a file under the spec's ``docs/specification/`` and its
    section heading."""

    file: str
    section: str

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "section": self.section}

    def __str__(self) -> str:
        return f"{self.file}, \"{self.section}\""


@dataclass(frozen=True)
class TransportLevel:
    """How a case is judged on one transport where that transport's text differs: its level
    and per-code ``levels``, the text that sets them, and ``why`` (what a finding shows)."""

    level: str
    citation: Citation
    why: str
    levels: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> TransportLevel:
        cited = value["citation"]
        return cls(value["level"], Citation(cited["file"], cited["section"]), value["why"],
                   dict(value.get("levels", {})))


@dataclass(frozen=True)
class Transcript:
    """One case. ``source`` is the value as read (what :func:`canonical_text` writes back)."""

    name: str
    case_class: str
    version: str
    era: Era
    requirements: tuple[str, ...]
    description: str
    mode: str
    needs: frozenset[str]
    transports: frozenset[str]
    request: RequestShape
    expect: Expectation
    stdio: Expectation | None
    response: Recorded | None
    normalize: Mapping[str, str]
    fresh: bool = False
    source: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)
    level: str = "MUST"
    citation: Citation | None = None
    levels: Mapping[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    why: str | None = None
    """Why the case is judged at its level, shown with a finding at that level."""
    level_on: Mapping[str, TransportLevel] = field(default_factory=dict)

    def on_transport(self, transport: str) -> Transcript:
        """The case as judged on ``transport`` (``http`` or ``stdio``): its ``levelOn`` entry's
        level, citation, reason and per-code levels replace the case's, if it has one."""
        rule = self.level_on.get(transport)
        if rule is None:
            return self
        return dataclasses.replace(self, level=rule.level, citation=rule.citation,
                                   levels=dict(rule.levels), why=rule.why)

    def why_of(self, code: str) -> str | None:
        """The reason shown with a finding ``code``: the case's ``why`` when the finding is
        judged at the case's level (not at a ``levels`` entry's)."""
        return None if code in self.levels else self.why

    def level_of(self, code: str) -> str:
        """The level a finding with ``code`` is judged at (the case's unless ``levels`` says
        otherwise)."""
        return self.levels.get(code, self.level)

    def expectation_for(self, stdio: bool) -> Expectation:
        """The expectation on stdio (the ``stdio`` override) or over HTTP."""
        return self.stdio if stdio and self.stdio is not None else self.expect


def _invalid(name: str, message: str, path: str) -> ConformanceError:
    return ConformanceError(f"transcript {name}: {message}", code="conformance.transcript_invalid",
                            data={"transcript": name, "path": path})


def _check_rules(value: Mapping[str, Any], name: str) -> None:
    if value["name"] != name:
        raise _invalid(name, f"its name {value['name']!r} is not its file's", "$.name")
    for case_class, outcome in _PAIR_RULES:
        if value["class"] == case_class and value["expect"]["outcome"] not in (outcome,
                                                                              "answered"):
            raise _invalid(name, f"a {case_class} case expects {outcome}", "$.expect.outcome")
    if value["class"] == "negative" and value["expect"].get("boundary") is None:
        raise _invalid(name, "a negative case names its rejection boundary",
                       "$.expect.boundary")
    for transport in value.get("levelOn", {}):
        if value["mode"] == "recorded":
            raise _invalid(name, "a recorded case is judged the same on every transport",
                           "$.levelOn")
        if transport not in value.get("transports", ("http", "stdio")):
            raise _invalid(name, f"a level for {transport}, where the case does not run",
                           f"$.levelOn.{transport}")
    if ("response" in value) != (value["mode"] == "recorded"):
        raise _invalid(name, "a recorded case holds a response, and only it", "$.response")
    request = value["request"]
    if ("body" in request) == ("raw" in request) and request.get("httpMethod", "POST") == "POST":
        raise _invalid(name, "a POST request has exactly one of body and raw", "$.request")


def _inherited(expect: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``stdio`` expectation takes from ``expect`` unless it says otherwise: not the
    answer's body or events, which describe the HTTP answer it replaces."""
    return {k: v for k, v in expect.items() if k not in ("body", "events")}


def _era(version: str) -> Era:
    era = era_of(version)
    assert era is not None  # the schema admits known versions only
    return era


def parse_transcript(data: bytes, name: str) -> Transcript:
    """Read one transcript file's bytes (``name``: the file's stem)."""
    try:
        value = loads_json(data)
    except ContractError:
        raise _invalid(name, "not JSON", "$") from None
    if canonical_text(value).encode("utf-8") != data:
        raise ConformanceError(f"transcript {name} is not in canonical form (sorted keys, "
                               "two-space indent, one trailing newline)",
                               code="conformance.not_canonical", data={"transcript": name})
    for error in _validator().iter_errors(value):
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                             for p in error.instance_path)
        raise _invalid(name, "breaks the transcript schema", path)
    _check_rules(value, name)
    stdio = value.get("stdio")
    return Transcript(
        value["name"], value["class"], value["era"], _era(value["era"]),
        tuple(value["requirements"]), value["description"], value["mode"],
        frozenset(value.get("needs", ())), frozenset(value.get("transports", ("http", "stdio"))),
        RequestShape.from_json(value["request"]), Expectation.from_json(value["expect"]),
        None if stdio is None else Expectation.from_json({**_inherited(value["expect"]),
                                                          **stdio}),
        None if "response" not in value else Recorded.from_json(value["response"]),
        dict(value.get("normalize", {})), value.get("connection") == "fresh", value,
        value.get("level", "MUST"),
        None if "citation" not in value else Citation(value["citation"]["file"],
                                                      value["citation"]["section"]),
        dict(value.get("levels", {})), tuple(value.get("requires", ())), value.get("why"),
        {transport: TransportLevel.from_json(rule)
         for transport, rule in value.get("levelOn", {}).items()})
