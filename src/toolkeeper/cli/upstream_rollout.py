"""``toolkeeper upstream approve NAME TOOL --digest D --rollout POLICY --evidence BUNDLE``
(docs/upstreams.md, docs/rollouts.md): an approved upstream drift rolled out against the version
in force, as ``release start`` rolls a version out, instead of reaching every caller at once.

In order, each step refused before anything is written when it can be:

1. the start's inputs (:func:`~toolkeeper.cli.release_cmds.plan_start`: steps, interval,
   policy, bundle): bad input, exit 2, nothing written;
2. the drift (``upstream.digest_mismatch``), and the exposed tool's version in force, which is
   the rollback target (``release.no_target`` when it has none active);
3. the start's proof (:func:`~toolkeeper.cli.release_cmds.prove_start`: no rollout of the tool
   not over, the target's health window and its signed rollback evidence): refused, exit 1,
   the drift still pending, nothing written;
4. the approval: the drift's descriptor published as the next version (as without
   ``--rollout``), the drift recorded approved;
5. the rollout stored (:func:`~toolkeeper.cli.release_cmds.start_rollout`), with the evidence
   proven in step 3.

A start refused in step 5, after the publication (another rollout of the tool started in
between, a store that failed), cannot take the publication back (a published version is never
removed), and leaving the new version active would make it the newest version for every
caller: the very thing ``--rollout`` was asked to prevent. So the new version is withdrawn:
deprecated, with a message naming the refusal, which every unpinned caller then passes over for
the version in force (as a rollback would leave it) -- unless a rollout of the tool not over
already has that version as its candidate (someone started it in between): it is rolled out
then, and left to that rollout. The command then fails with ``upstream.rollout_not_started``
(exit 1), its data naming the drift, the published version, the start's own code (``cause``),
whether the version was withdrawn (``withdrawn``), and the rollout that rolls it out
(``rolledOutBy``, else None); when it could be neither withdrawn nor is rolled out, it is
active and the message says so. It is never left half-done silently.
"""

from __future__ import annotations

from typing import Any

from toolkeeper.cli.release_cmds import StartPlan, prove_start, start_rollout
from toolkeeper.contracts.semver import Version
from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book, rollout_id
from toolkeeper.registry.rollouts import FINAL_STATES, Rollout
from toolkeeper.registry.upstream_records import DriftRecord
from toolkeeper.upstreams.governance import Upstreams

__all__ = ["NOT_STARTED", "approve_rolled_out"]

NOT_STARTED = "upstream.rollout_not_started"


def _in_force(registry: Registry, tool: str) -> Version:
    """The exposed tool's version in force: its newest active version."""
    latest = registry.latest(tool)
    if latest is None:
        raise ToolkeeperError(f"{tool} has no active version to roll back to",
                              code="release.no_target", data={"tool": tool})
    return latest.version


def _withdrawn(registry: Registry, tool: str, version: Version, cause: ToolkeeperError,
               actor: str) -> bool:
    """Deprecate ``tool`` ``version`` (its rollout did not start); whether that held."""
    try:
        registry.deprecate(tool, version, actor=actor, message=(
            f"withdrawn: approved from its upstream, but its rollout did not start "
            f"({cause.code})"))
    except ToolkeeperError:
        return False
    return True


def approve_rolled_out(ups: Upstreams, url: str | None, name: str, tool: str, digest: str,
                       plan: StartPlan) -> tuple[DriftRecord, Rollout]:
    """Approve ``name``'s drift ``digest`` of ``tool`` and roll the published version out
    against the version in force (see the module docstring for the order and the refusals)."""
    registry = ups.registry
    exposed = ups.approval_row(name, tool, digest).exposed
    target = _in_force(registry, exposed)
    evidence = prove_start(registry, url, plan, exposed, target)
    decided = ups.approve(name, tool, digest, actor=plan.actor)
    assert decided.published_version is not None  # approve publishes or raises
    candidate = Version.parse(decided.published_version)
    try:
        return decided, start_rollout(registry, url, plan, exposed, candidate, target, evidence)
    except ToolkeeperError as exc:
        other = rollout_book(registry).get(exposed)
        by = (rollout_id(other) if other is not None and other.state not in FINAL_STATES
              and other.candidate == candidate else None)
        withdrawn = by is None and _withdrawn(registry, exposed, candidate, exc, plan.actor)
        data: dict[str, Any] = {"upstream": name, "tool": tool, "exposed": exposed,
                                "drift": decided.id, "publishedVersion": str(candidate),
                                "target": str(target), "cause": exc.code, "withdrawn": withdrawn,
                                "rolledOutBy": by}
        state = (f"it is rolled out by rollout {by}" if by is not None else
                 f"it is deprecated (withdrawn): unpinned callers keep {exposed} {target}"
                 if withdrawn else "it could not be withdrawn and is active: it reaches "
                 "every caller")
        raise ToolkeeperError(f"{name}/{tool}: approved and published as {exposed} "
                              f"{candidate}, but its rollout did not start ({exc.code}: "
                              f"{exc.message}); {state}", code=NOT_STARTED, data=data) from None
