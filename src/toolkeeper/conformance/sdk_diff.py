"""The SDK diff (SPEC 5.4): the high-risk fixtures' exact answers served to the real SDK
clients, and what each SDK made of them, judged by the role's policy.

For each fixture (:data:`SDK_DIFF_FIXTURES`, recorded transcripts from the built-in corpus and
``sdk_fixtures/``) and each SDK (:mod:`.sdk_clients`), a replay origin on 127.0.0.1
(:mod:`.sdk_origin`) answers the fixture's request with the fixture's bytes and the SDK's
driver makes that request through the SDK's own API. Each :class:`SdkRun` records the raw
status, headers and body the origin sent, the SDK's normalized value or exception, the
expected projection for the era, and the changes (:mod:`.sdk_changes`): accounted removals and
semantic loss listed apart. The policy file (``sdk_diff_policy.json``, canonical JSON, loaded
by :func:`load_policy`) says per role which kinds of change are acceptable; where two SDKs
normalize a fixture differently, each is judged by the same rows, so the policy says which one
is acceptable. Everything in a run is redacted (the gateway's one redaction) as it is built,
so the report (:class:`SdkDiffReport`: canonical JSON and a digest) can be written anywhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from toolkeeper.conformance.corpus import builtin_corpus
from toolkeeper.conformance.evidence import redact_response, redact_value
from toolkeeper.conformance.sdk_changes import KINDS, Change, diff_outcome, expected_projection
from toolkeeper.conformance.sdk_clients import Located, locate, run_driver
from toolkeeper.conformance.sdk_origin import App, ReplayOrigin
from toolkeeper.conformance.transcript import Transcript, canonical_text, parse_transcript
from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.redaction import Redaction, redact_text
from toolkeeper.errors import ConformanceError, ContractError
from toolkeeper.protocol.versions import Era

__all__ = ["ROLES", "SDK_DIFF_FIXTURES", "Host", "Policy", "SdkDiffReport", "SdkRun", "load_policy",
           "run_sdk_diff", "sdk_fixtures"]

ROLES: Final = ("application", "intermediary")
_VERDICTS: Final = frozenset({"accept", "refuse"})

SDK_DIFF_FIXTURES: Final = (
    "golden-sdk-tools-list-cache-hints",
    "golden-unknown-additive-field",
    "golden-sdk-legacy-additive-field",
    "negative-unknown-result-type",
    "negative-sdk-tool-error-on-400",
    "golden-input-required-result",
)
"""The high-risk fixtures, by transcript name: bookkeeping an SDK may strip (``resultType``,
``_meta``, ``ttlMs``, ``cacheScope``), an additive field it must not lose (``futureHint``) in
both eras, an unknown ``resultType``, an error on HTTP 400, and ``input_required``."""


@dataclass(frozen=True)
class Host:
    """Where the replay origins come from: ``server`` makes the real MCP server that answers
    everything but the fixture's request (one per run), ``serve`` serves an ASGI app on
    127.0.0.1 for a ``with`` block and gives its URL."""

    server: Callable[[], App]
    serve: Callable[[App], AbstractContextManager[str]]


def sdk_fixtures(names: Sequence[str] = SDK_DIFF_FIXTURES) -> list[Transcript]:
    """The named recorded transcripts, from the built-in corpus and ``sdk_fixtures/``."""
    folder = resources.files("toolkeeper.conformance").joinpath("sdk_fixtures")
    known = {t.name: t for t in builtin_corpus()}
    known.update((t.name, t) for t in (
        parse_transcript(entry.read_bytes(), entry.name.removesuffix(".json"))
        for entry in folder.iterdir() if entry.name.endswith(".json")))
    missing = [name for name in names if name not in known]
    if missing:
        raise ConformanceError("unknown SDK diff fixture", code="conformance.no_transcripts",
                               data={"names": missing})
    return [known[name] for name in names]


@dataclass(frozen=True)
class Policy:
    """The roles' verdicts per change kind, the accounted (bookkeeping) field names, and the
    SHA-256 of the policy's canonical form (recorded in every report)."""

    accounted: frozenset[str]
    roles: Mapping[str, Mapping[str, str]]
    digest: str

    def refused(self, role: str, changes: Sequence[Change]) -> tuple[str, ...]:
        rules = self.roles[role]
        return tuple(sorted({c.kind for c in changes if rules[c.kind] == "refuse"}))


def _bad_policy(problem: str, path: str) -> ConformanceError:
    return ConformanceError(f"SDK diff policy: {problem}", code="conformance.bad_policy",
                            data={"path": path})


def load_policy(path: Path | None = None) -> Policy:
    """The policy file (default: the shipped ``sdk_diff_policy.json``): canonical JSON with
    ``accountedFields`` and, for every role, ``accept`` or ``refuse`` for every kind."""
    try:
        text = (resources.files("toolkeeper.conformance").joinpath("sdk_diff_policy.json")
                .read_text("utf-8") if path is None else path.read_text("utf-8"))
        value = loads_json(text)
    except (OSError, UnicodeDecodeError, ContractError):
        raise _bad_policy("not a readable JSON file", "$") from None
    if not isinstance(value, dict) or canonical_text(value) != text:
        raise _bad_policy("not a canonical JSON object", "$")
    accounted, roles = value.get("accountedFields"), value.get("roles")
    if not isinstance(accounted, list) or not all(isinstance(f, str) for f in accounted):
        raise _bad_policy("accountedFields is not a list of names", "$.accountedFields")
    if not isinstance(roles, dict):
        raise _bad_policy("roles is not an object", "$.roles")
    for role in ROLES:
        rules = roles.get(role)
        for kind in KINDS:
            if not isinstance(rules, dict) or rules.get(kind) not in _VERDICTS:
                raise _bad_policy("every kind needs accept or refuse", f"$.roles.{role}.{kind}")
    return Policy(frozenset(accounted), {r: dict(roles[r]) for r in ROLES},
                  hashlib.sha256(canonical_json(value)).hexdigest())


@dataclass(frozen=True)
class SdkRun:
    """One fixture through one SDK: ``skipped`` holds why it did not run (the SDK is absent or
    does not speak the fixture's era), else the redacted evidence and the role's verdict."""

    fixture: str
    sdk: str
    era: str
    skipped: str | None = None
    label: str | None = None
    negotiated: str | None = None
    raw: Mapping[str, Any] | None = None
    normalized: Mapping[str, Any] | None = None
    expected: Mapping[str, Any] | None = None
    changes: tuple[Change, ...] = ()
    refused: tuple[str, ...] = ()
    requests: tuple[str, ...] = ()
    redactions: tuple[Redaction, ...] = field(default=())

    def _paths(self, kind: str) -> list[str]:
        return [c.path for c in self.changes if c.kind == kind]

    def to_json(self) -> dict[str, Any]:
        return {"fixture": self.fixture, "sdk": self.sdk, "era": self.era,
                "outcome": "skipped" if self.skipped else "ran", "reason": self.skipped,
                "label": self.label, "negotiatedEra": self.negotiated, "raw": self.raw,
                "normalized": self.normalized, "expected": self.expected,
                "accountedRemovals": self._paths("accounted_removal"),
                "semanticLoss": self._paths("semantic_loss"),
                "changes": [c.to_json() for c in self.changes],
                "refused": list(self.refused), "acceptable": not self.refused,
                "sdkRequests": list(self.requests),
                "redactions": [{"path": p, "rule": r} for p, r in self.redactions]}


def _agreement_key(run: SdkRun) -> str:
    normalized = run.normalized or {}
    if normalized.get("outcome") == "value":
        return canonical_json(normalized.get("value")).decode()
    return f"exception {(normalized.get('exception') or {}).get('code')}"


@dataclass(frozen=True)
class SdkDiffReport:
    """A run of the SDK diff: the role judged, the policy's digest, every :class:`SdkRun`."""

    role: str
    policy_digest: str
    sdks: tuple[str, ...]
    runs: tuple[SdkRun, ...]

    @property
    def refused(self) -> int:
        return sum(1 for run in self.runs if run.refused)

    def disagreements(self) -> list[dict[str, Any]]:
        """Fixtures two SDKs normalized differently: the SDKs grouped by what they made."""
        out = []
        for fixture in dict.fromkeys(run.fixture for run in self.runs):
            groups: dict[str, list[str]] = {}
            for run in self.runs:
                if run.fixture == fixture and not run.skipped:
                    groups.setdefault(_agreement_key(run), []).append(run.sdk)
            if len(groups) > 1:
                out.append({"fixture": fixture, "groups": sorted(groups.values())})
        return out

    def to_json(self) -> dict[str, Any]:
        ran = [run for run in self.runs if not run.skipped]
        return {"role": self.role, "policyDigest": self.policy_digest, "sdks": list(self.sdks),
                "ran": len(ran), "skipped": len(self.runs) - len(ran), "refused": self.refused,
                "disagreements": self.disagreements(),
                "runs": [run.to_json() for run in self.runs]}

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())

    @property
    def digest(self) -> str:
        """``sha256:`` of the canonical form."""
        return "sha256:" + hashlib.sha256(self.canonical()).hexdigest()


def _mode(fixture: Transcript) -> str:
    return "legacy" if fixture.era is Era.LEGACY else fixture.version


def _input_required(fixture: Transcript) -> bool:
    body = fixture.response.body if fixture.response is not None else None
    result = body.get("result") if isinstance(body, dict) else None
    return isinstance(result, dict) and result.get("resultType") == "input_required"


def _normalized(out: Mapping[str, Any], evidence: list[Redaction]) -> dict[str, Any]:
    if out.get("outcome") == "value":
        return {"outcome": "value",
                "value": redact_value(out.get("value"), "$.normalized.value", evidence)}
    found = out.get("exception")
    exc: Mapping[str, Any] = found if isinstance(found, dict) else {}
    code = exc.get("code")
    return {"outcome": "exception", "exception": {
        "type": redact_text(str(exc.get("type"))), "code": code if type(code) is int else None,
        "message": redact_text(str(exc.get("message", "")))}}


def _run_one(fixture: Transcript, located: Located, policy: Policy, role: str, host: Host
             ) -> SdkRun:
    era = fixture.version
    if located.reason is not None:
        return SdkRun(fixture.name, located.sdk, era, skipped=located.reason)
    body = fixture.request.body
    request: Mapping[str, Any] = body if isinstance(body, dict) else {}
    found = request.get("params")
    params: Mapping[str, Any] = found if isinstance(found, dict) else {}
    origin = ReplayOrigin(host.server(), fixture)
    with host.serve(origin) as url:
        out = run_driver(located, url, _mode(fixture), str(request.get("method")),
                         str(params.get("name", "")), params.get("arguments", {}),
                         manual_input=_input_required(fixture))
    label = redact_text(str(out.get("sdk", located.sdk)))
    if out.get("outcome") == "unsupported":
        return SdkRun(fixture.name, located.sdk, era, label=label,
                      skipped=f"{label} does not speak the {era} era")
    evidence: list[Redaction] = []
    served = origin.served[0] if origin.served else None
    raw = None
    wire: Any = None
    if served is not None:
        headers, answer = redact_response(served, "$.raw", evidence)
        raw = {"status": served.status, "headers": [list(h) for h in headers],
               "body": answer.to_json()}
        wire = json.loads(served.body)
    normalized = _normalized(out, evidence)
    changes = diff_outcome(wire, fixture.case_class == "golden" or (
        isinstance(wire, dict) and "error" in wire), normalized, policy.accounted)
    if served is None:  # the SDK never sent the fixture's request (it failed before)
        changes = (Change("rejected", "$"),)
    expected = redact_value(expected_projection(wire, policy.accounted), "$.expected", evidence)
    negotiated = out.get("era")
    return SdkRun(fixture.name, located.sdk, era, label=label,
                  negotiated=negotiated if isinstance(negotiated, str) else None, raw=raw,
                  normalized=normalized, expected=expected, changes=changes,
                  refused=policy.refused(role, changes), requests=tuple(origin.methods),
                  redactions=tuple(evidence))


def run_sdk_diff(host: Host, sdks: Sequence[str], role: str = "application",
                 policy: Policy | None = None, fixtures: Sequence[Transcript] | None = None, *,
                 require: bool = False) -> SdkDiffReport:
    """Every fixture through every SDK in ``sdks`` (names of :data:`.sdk_clients.SDKS`), each
    against a replay origin from ``host``, judged for ``role``. An SDK that is not installed
    is skipped with the reason, or, with ``require`` (CI), refused:
    :class:`~toolkeeper.errors.ConformanceError` ``conformance.sdk_missing``."""
    if role not in ROLES:
        raise ConformanceError("unknown role", code="conformance.bad_role",
                               data={"role": role, "roles": list(ROLES)})
    policy = policy or load_policy()
    located = [locate(sdk) for sdk in sdks]
    missing = [found.sdk for found in located if found.reason is not None]
    if require and missing:
        raise ConformanceError("an SDK the diff needs is not installed",
                               code="conformance.sdk_missing", data={"sdks": missing})
    runs = tuple(_run_one(fixture, found, policy, role, host)
                 for fixture in (sdk_fixtures() if fixtures is None else fixtures)
                 for found in located)
    return SdkDiffReport(role, policy.digest, tuple(sdks), runs)
