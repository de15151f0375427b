"""The publish guard (SPEC 2.1): immutability, monotonicity, bump enforcement.

A pure function of the name's history and the candidate; the registry runs it *inside* the
store transaction that will write, so racing publishers are judged against the history that
actually precedes them.

Choices the spec leaves open (documented here because they are decisions, not accidents):

* ``previous`` is the newest *active* version (the live contract, seed 000 section 4). When no
  version is active (all deprecated or retired) it is the newest version of any status, so a
  name never moves backwards and a retired line is still evolved from, not forgotten.
* The major number is a promise in both directions. A MAJOR change needs exactly
  ``previous.major + 1`` (``0.x`` gets no exemption: our callers pin versions, so an unstable
  line is named by a pre-release tag, not by a zero major). A MINOR change needs the same major
  and a higher minor (SPEC 2.1); a new major for one is refused as ``publish.bump_unjustified``
  (seed 000 section 4: "major changed or minor did not increase"). A PATCH change
  (descriptions, opening a closed object) accepts any greater version, a new major included
  (seed 000 section 4 has no rule for it): an operator needs a new major for a behavioural
  break the schema cannot show.
* Pre-releases (semver item 9) promise nothing among themselves: while ``previous`` is a
  pre-release of the same ``major.minor.patch`` as the candidate (iterating ``2.0.0-rc.1`` to
  ``-rc.2`` or releasing ``2.0.0``), the bump is measured against the newest active version
  *outside* that train (its base), so the release still honours the bump it claims over the
  last stable contract. A train with no base is unguarded, like a first publish.
* ``minimumVersion`` is the smallest *release* (no pre-release tag) among the next patch,
  minor and major of ``previous`` and of the reference that would pass every rule with the
  same content (each candidate judged against the reference *it* would have), or ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec
from toolkeeper.errors import PublishRefusedError, SemverError

__all__ = ["RULES", "Classifier", "GuardDecision", "check_publish"]

Classifier = Callable[[ToolSpec, ToolSpec], Verdict]

#: Every refusal rule id and what it means (stable; scripts and the CLI match on the id).
RULES: Mapping[str, str] = MappingProxyType({
    "publish.immutable": "this (name, version) is published with different content; "
                         "a published version is never replaced",
    "publish.not_monotonic": "the version is not greater than the latest active version",
    "publish.bump_required": "the version does not carry the bump the change requires",
    "publish.bump_unjustified": "a new major version for a change that only adds to the "
                                "contract (a MINOR change keeps its major)",
})


def _core(version: Version) -> tuple[int, int, int]:
    return (version.major, version.minor, version.patch)


def _bump_major(ref: Version, new: Version) -> str | None:
    return None if new.major == ref.major + 1 else "publish.bump_required"


def _bump_minor(ref: Version, new: Version) -> str | None:
    if new.major > ref.major:
        return "publish.bump_unjustified"
    return None if new.major == ref.major and new.minor > ref.minor else "publish.bump_required"


def _bump_patch(ref: Version, new: Version) -> str | None:
    return None  # any greater version (monotonicity is checked before the bump rules)


# Bump rule per verdict: (reference version, candidate version) -> refusal rule id or None.
_BUMP_RULES: Mapping[Bump, Callable[[Version, Version], str | None]] = MappingProxyType({
    Bump.MAJOR: _bump_major,
    Bump.MINOR: _bump_minor,
    Bump.PATCH: _bump_patch,
})

# The refusal rule ids each bump rule can return: what an accepted publish was checked by.
_BUMP_RULE_IDS: Mapping[Bump, tuple[str, ...]] = MappingProxyType({
    Bump.MAJOR: ("publish.bump_required",),
    Bump.MINOR: ("publish.bump_required", "publish.bump_unjustified"),
    Bump.PATCH: (),
})


@dataclass(frozen=True, slots=True)
class GuardDecision:
    """An accepted publish: ``existing`` is set for an identical re-publish (a no-op);
    ``reference`` and ``verdict`` say what the candidate was classified against; ``checks``
    are the rule ids of :data:`RULES` it was judged by and passed, sorted."""

    existing: ToolSpec | None
    reference: ToolSpec | None
    verdict: Verdict | None
    checks: tuple[str, ...] = ()


class _Context:
    """The history of one name, with classification memoised per reference."""

    def __init__(self, history: Sequence[ToolSpec], spec: ToolSpec, classify: Classifier) -> None:
        self.spec = spec
        self.versions = {s.version for s in history}
        active = [s for s in history if s.status is Status.ACTIVE]
        self.pool = sorted(active or history, key=lambda s: s.version)
        self.previous = self.pool[-1] if self.pool else None
        self._classify = classify
        self._verdicts: dict[Version, Verdict] = {}

    def reference(self, candidate: Version) -> ToolSpec | None:
        prev = self.previous
        if prev is None or not prev.version.is_prerelease or _core(prev.version) != _core(candidate):
            return prev
        base = [s for s in self.pool if _core(s.version) != _core(candidate)]
        return base[-1] if base else None

    def verdict(self, reference: ToolSpec) -> Verdict:
        found = self._verdicts.get(reference.version)
        if found is None:
            found = self._classify(reference, self.spec)
            self._verdicts[reference.version] = found
        return found

    def first_failure(self, candidate: Version) -> str | None:
        """The first rule ``candidate`` breaks (immutability aside), or None."""
        assert self.previous is not None
        if candidate <= self.previous.version:
            return "publish.not_monotonic"
        ref = self.reference(candidate)
        if ref is None:
            return None
        return _BUMP_RULES[self.verdict(ref).bump](ref.version, candidate)

    def minimum_version(self) -> Version | None:
        """The smallest version that would pass. The bump rules constrain only the major and
        minor numbers, so from each patch, minor and major bump of the versions compared with,
        the patches that follow are tried in order (as many as the versions that can be in the
        way) and each chain's first passing one kept."""
        seeds = [s.version for s in (self.previous, self.reference(self.spec.version)) if s]
        passing: list[Version] = []
        for start in {c for v in seeds for c in _bumps(v)}:
            candidate: Version | None = start
            for _ in range(len(self.versions) + 2):
                if candidate is None:
                    break
                if candidate not in self.versions and self.first_failure(candidate) is None:
                    passing.append(candidate)
                    break
                candidate = _next_patch(candidate)
        return min(passing) if passing else None


def _bumps(version: Version) -> list[Version]:
    """The patch, minor and major bumps of a version that can be made (none past the digit
    bound of :data:`~toolkeeper.contracts.semver.MAX_NUMBER_DIGITS`)."""
    made = (_made(version.bump_patch), _made(version.bump_minor), _made(version.bump_major))
    return [bump for bump in made if bump is not None]


def _next_patch(version: Version) -> Version | None:
    return _made(version.bump_patch)


def _made(bump: Callable[[], Version]) -> Version | None:
    try:
        return bump()
    except SemverError:
        return None


def _refusal(ctx: _Context, rule: str, against: ToolSpec | None = None) -> PublishRefusedError:
    """The refusal, its changes judged against ``against`` (for ``publish.immutable``: the
    stored copy of the same version) or else against the version the guard compares with."""
    ref = against if against is not None else ctx.reference(ctx.spec.version)
    verdict = ctx.verdict(ref) if ref is not None else None
    minimum = ctx.minimum_version()
    data: dict[str, Any] = {
        "rule": rule,
        "name": ctx.spec.name,
        "version": str(ctx.spec.version),
        "bump": verdict.bump.value if verdict else None,
        "changes": [c.to_dict() for c in verdict.changes] if verdict else [],
        "against": str(ref.version) if ref else None,
        "minimumVersion": str(minimum) if minimum else None,
    }
    hint = f"; the smallest version that would pass is {minimum}" if minimum else ""
    message = f"publish of {ctx.spec.name} {ctx.spec.version} refused: {RULES[rule]}{hint}"
    return PublishRefusedError(message, code=rule, data=data)


def check_publish(history: Sequence[ToolSpec], spec: ToolSpec,
                  classify: Classifier) -> GuardDecision:
    """Judge ``spec`` against the stored ``history`` of its name (oldest first).

    Returns the decision, or raises :class:`PublishRefusedError` whose ``code`` is the rule id
    and whose ``data`` carries rule, bump, changes, the reference version and minimumVersion.
    """
    ctx = _Context(history, spec, classify)
    for stored in history:
        if stored.version == spec.version:
            if stored.content_digest == spec.content_digest:
                return GuardDecision(stored, None, None)
            raise _refusal(ctx, "publish.immutable", stored)
    if ctx.previous is None:
        return GuardDecision(None, None, None, ("publish.immutable",))
    rule = ctx.first_failure(spec.version)
    if rule is not None:
        raise _refusal(ctx, rule)
    ref = ctx.reference(spec.version)
    verdict = ctx.verdict(ref) if ref else None
    checks = {"publish.immutable", "publish.not_monotonic",
              *(_BUMP_RULE_IDS[verdict.bump] if verdict else ())}
    return GuardDecision(None, ref, verdict, tuple(sorted(checks)))
