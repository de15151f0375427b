"""Release commands: ``toolkeeper release start|status|pause|resume|promote|abort|history``
(docs/rollouts.md): a progressive rollout of a tool version, stored in the registry so every
gateway replica on it routes the same way (:mod:`toolkeeper.registry.rollout_book`).

``start`` makes a published version the candidate against the target (default: the newest
active version below it). Before anything is stored, the target must be proven: its call-log
window since ``--health-since`` judged healthy under the policy's absolute rules, and its
rollback evidence, built from the store and signed with the configured gate key, verifying as a
rollback target under the trusted keys; otherwise the start is refused
(``release.target_unproven``, exit 1, ``data.refusals`` or ``data.cause`` saying why) and
nothing is stored. ``--evidence`` is the pre-rollout gate bundle (``toolkeeper gate bundle``):
its digests are verified and its transcripts, SDK diffs and proxy evidence are kept with the
rollout, for the evaluator to rebuild a bundle at each interval. The start itself is
:func:`plan_start` (the inputs read and checked), :func:`prove_start` (no rollout of the tool
not over, the target proven) and :func:`start_rollout` (the rollout stored), which ``upstream
approve --rollout`` calls as well.

Exit codes: 0 done; 1 refused (``release.target_unproven``, ``release.in_progress``,
``release.state_invalid``, ``release.conflict``); 2 bad input (a file, version, option or
registry that cannot be used, a tool without a rollout: ``release.not_found``). Under
``--json`` an error is ``{"error": {code, message, data}}`` on stdout.
"""

from __future__ import annotations

import getpass
import re
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import click

from toolkeeper.cli.documents import read_document
from toolkeeper.cli.gate_decide_cmd import keys
from toolkeeper.cli.gate_rollback_cmd import artifact_resolver, window_healthy
from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.sources import read_source
from toolkeeper.cli.usage import ToolkeeperGroup
from toolkeeper.config import load_config
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate import WindowPolicy
from toolkeeper.gate.evidence import verify_bundle
from toolkeeper.gate.keys import require_signer
from toolkeeper.gate.rollback import verify
from toolkeeper.gate.rollback_evidence import build_evidence
from toolkeeper.registry import Registry
from toolkeeper.registry.location import ENV_VAR, default_url
from toolkeeper.registry.rollout_book import RolloutBook, check_steps, rollout_book, rollout_id
from toolkeeper.registry.rollout_rows import thawed
from toolkeeper.registry.rollouts import RUNNING, Rollout, RolloutDecision

__all__ = [
    "REFUSED_CODES",
    "StartPlan",
    "actor_of",
    "actor_option",
    "decision_json",
    "open_book",
    "plan_start",
    "prove_start",
    "reason_text",
    "register",
    "registry_options",
    "registry_url_of",
    "release_group",
    "rollout_json",
    "rollout_line",
    "start_rollout",
]

F = TypeVar("F", bound=Callable[..., Any])
REFUSED_CODES = frozenset({"release.target_unproven", "release.in_progress",
                           "release.state_invalid", "release.conflict"})
"""The codes of a release refused (exit 1); any other error is bad input (exit 2)."""
_KEPT_SECTIONS = ("transcripts", "sdkDiffs", "proxyEvidence")
_DURATION = re.compile(r"(\d+)(s|m|h|d)?")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def registry_options(func: F) -> F:
    func = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(func)
    func = click.option("--config", "config_path", default=None, metavar="FILE",
                        help="The configuration: registry.url, [gate] keys, [estate].")(func)
    return click.option("--registry", "registry_url", envvar=ENV_VAR, default=None,
                        metavar="URL", help="sqlite:///path.db or postgresql://... (memory: is "
                        f"refused; env {ENV_VAR}; default: registry.url of --config, else a "
                        "SQLite file in the user data dir).")(func)


def actor_option(func: F) -> F:
    return click.option("--actor", default=None, metavar="WHO",
                        help="Who is recorded (default os:<your user name>).")(func)


def _fail(error: ToolkeeperError, as_json: bool) -> NoReturn:
    fail(error, as_json=as_json,
         code=EXIT_REFUSED if error.code in REFUSED_CODES else EXIT_BAD_INPUT)


def actor_of(given: str | None) -> str:
    if given:
        return given
    try:
        return f"os:{getpass.getuser()}"
    except (KeyError, OSError):
        return "os:unknown"


def registry_url_of(registry_url: str | None, config_path: str | None) -> str | None:
    url = registry_url or load_config(config_path, read=read_source).registry.url or None
    scheme, sep, _ = (url if url is not None else default_url()).strip().partition(":")
    if sep and scheme.lower() == "memory":
        raise ToolkeeperError("a rollout needs a registry that outlives the command: memory: "
                              "keeps nothing", code="registry.memory_refused",
                              data={"scheme": "memory"})
    return url


@contextmanager
def open_book(registry_url: str | None, config_path: str | None, as_json: bool
          ) -> Iterator[tuple[Registry, RolloutBook]]:
    """The registry and its rollouts; every ToolkeeperError inside is reported."""
    try:
        with Registry.open(registry_url_of(registry_url, config_path), create=False) as registry:
            yield registry, rollout_book(registry)
    except ToolkeeperError as exc:
        _fail(exc, as_json)


def _steps(text: str) -> tuple[int, ...]:
    try:
        steps = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ToolkeeperError(f"--steps {text!r} is not comma-separated percentages",
                              code="release.steps_invalid", data={"steps": text}) from None
    check_steps(steps)
    return steps


def _interval(text: str) -> int:
    found = _DURATION.fullmatch(text.strip())
    seconds = int(found.group(1)) * _UNIT_S[found.group(2)] if found else 0
    if seconds < 1:
        raise ToolkeeperError(f"--interval {text!r} is not a duration such as 30s, 5m or 1h",
                              code="release.interval_invalid", data={"interval": text})
    return seconds


def _kept_evidence(path: str) -> dict[str, Any]:
    """The bundle's digest and the sections the evaluator rebuilds from, its digests verified
    (the first refusal raised, all of them in ``data.refusals``)."""
    value = read_document(path)
    refusals = verify_bundle(value)
    if refusals:
        listed = "; ".join(f"{r['path']}: {r['code']}" for r in refusals)
        raise ToolkeeperError(f"{path}: the evidence bundle is refused: {listed}",
                              code=refusals[0]["code"], path=refusals[0]["path"],
                              data={"refusals": refusals, "file": path})
    sections = value["sections"]
    return {"bundleDigest": value["digest"],
            **{name: sections[name]["content"] for name in _KEPT_SECTIONS}}


def _target(registry: Registry, tool: str, candidate: Version, given: str | None) -> Version:
    if given is not None:
        return Version.parse(given)
    below = [s.version for s in registry.versions(tool)
             if s.status is Status.ACTIVE and s.version < candidate]
    if not below:
        raise ToolkeeperError(f"{tool} has no active version below {candidate} to roll back to",
                              code="release.no_target",
                              data={"tool": tool, "candidate": str(candidate)})
    return max(below)


def _unproven(tool: str, target: Version, why: str, **data: Any) -> ToolkeeperError:
    return ToolkeeperError(f"the rollback target {tool} {target} is not proven: {why}; "
                           "nothing was stored", code="release.target_unproven",
                           data={"tool": tool, "target": str(target), **data})


def _proven_evidence(registry: Registry, url: str | None, tool: str, target: Version,
                     policy_path: str, health_since: str, config_path: str | None,
                     handler_refs: tuple[str, ...], demo: bool) -> dict[str, Any]:
    """The target's signed rollback evidence, verified as a rollback target (else
    ``release.target_unproven``)."""
    found, trusted = keys(config_path, ())
    signer = require_signer(found)
    if registry.get(tool, target) is None:
        raise ToolkeeperError(f"{tool} {target} is not published", code="registry.not_found",
                              data={"name": tool, "version": str(target)})
    estate = load_config(config_path, read=read_source).estate
    try:
        healthy = window_healthy(policy_path, health_since, None, None, url, tool, str(target))
        artifact = artifact_resolver(handler_refs or estate.handlers, demo or estate.demo)
        evidence = build_evidence(registry, tool, target, signer, healthy=healthy,
                                  artifact=artifact)
    except ToolkeeperError as exc:
        if exc.code.startswith(("gate.no_", "gate.admission")):
            raise _unproven(tool, target, exc.message, cause=exc.code) from None
        raise
    refusals = verify(evidence, trusted)
    if refusals:
        listed = ", ".join(f"{r['code']} at {r['path']}" for r in refusals)
        raise _unproven(tool, target, listed, refusals=refusals)
    return evidence


@dataclass(frozen=True, slots=True)
class StartPlan:
    """What a start is asked for, its files read and its options checked."""

    policy_path: str
    policy: Any
    kept: dict[str, Any]
    """The evidence bundle's digest and the sections the evaluator rebuilds from."""
    steps: tuple[int, ...]
    interval_s: int
    max_holds: int
    health_since: str
    handler_refs: tuple[str, ...]
    demo: bool
    actor: str
    config_path: str | None


def plan_start(policy_path: str, evidence_path: str, steps_text: str, interval_text: str, *,
               max_holds: int, health_since: str, handler_refs: tuple[str, ...] = (),
               demo: bool = False, actor: str | None = None,
               config_path: str | None = None) -> StartPlan:
    """A start's inputs, each refused here (bad input) rather than after anything is stored:
    the steps, the interval, the policy (a window policy) and the bundle (its digests)."""
    steps, interval_s = _steps(steps_text), _interval(interval_text)
    policy = read_document(policy_path)
    WindowPolicy.from_json(policy)  # refused here, not at the first interval
    return StartPlan(policy_path, policy, _kept_evidence(evidence_path), steps, interval_s,
                     max_holds, health_since, handler_refs, demo, actor_of(actor), config_path)


def prove_start(registry: Registry, url: str | None, plan: StartPlan, tool: str,
                target: Version) -> dict[str, Any]:
    """Whether ``tool`` may start a rollout back to ``target``: no rollout of it not over
    (``release.in_progress``) and the target proven; its signed rollback evidence."""
    current = rollout_book(registry).get(tool)
    if current is not None and current.state in (RUNNING, "paused", "halted"):
        raise ToolkeeperError(f"{tool} has a rollout not over: {rollout_id(current)} "
                              f"({current.state})", code="release.in_progress",
                              data={"tool": tool, "state": current.state})
    return _proven_evidence(registry, url, tool, target, plan.policy_path, plan.health_since,
                            plan.config_path, plan.handler_refs, plan.demo)


def start_rollout(registry: Registry, url: str | None, plan: StartPlan, tool: str,
                  candidate: Version, target: Version,
                  evidence: dict[str, Any] | None = None) -> Rollout:
    """Store the rollout of ``tool`` ``candidate`` against ``target`` at its first step
    (``evidence``: the target's rollback evidence :func:`prove_start` gave; None: proven
    now). Refused as :meth:`RolloutBook.start` refuses."""
    if evidence is None:
        evidence = prove_start(registry, url, plan, tool, target)
    now = time.time_ns() // 1000
    return rollout_book(registry).start(Rollout(
        tool=tool, candidate=candidate, target=target, steps=plan.steps, step=0, state=RUNNING,
        salt=secrets.token_hex(16), policy=plan.policy, interval_s=plan.interval_s,
        max_holds=plan.max_holds, rollback_evidence=evidence, started_us=now,
        step_started_us=now, updated_us=now, actor=plan.actor,
        extra={"evidence": plan.kept, "healthSince": plan.health_since}))


def rollout_json(rollout: Rollout) -> dict[str, Any]:
    """A rollout as ``--json`` prints it (its salt, the keyed hash's key, is never shown)."""
    evidence = rollout.extra.get("evidence")
    return {"rollout": rollout_id(rollout), "tool": rollout.tool,
            "candidate": str(rollout.candidate), "target": str(rollout.target),
            "steps": list(rollout.steps), "step": rollout.step, "share": rollout.share,
            "state": rollout.state, "intervalS": rollout.interval_s,
            "maxHolds": rollout.max_holds, "holds": rollout.holds,
            "startedUs": rollout.started_us, "stepStartedUs": rollout.step_started_us,
            "updatedUs": rollout.updated_us, "seq": rollout.seq, "actor": rollout.actor,
            "policy": thawed(rollout.policy),
            "rollbackEvidence": thawed(rollout.rollback_evidence),
            "evidenceBundle": evidence.get("bundleDigest") if evidence else None}


def decision_json(decision: RolloutDecision) -> dict[str, Any]:
    return {"seq": decision.seq, "atUs": decision.at_us, "step": decision.step,
            "share": decision.share, "outcome": decision.outcome,
            "stateAfter": decision.state_after,
            "reasons": [thawed(r) for r in decision.reasons],
            "envelope": thawed(decision.envelope)}


def rollout_line(rollout: Rollout) -> str:
    return (f"{rollout.tool}: {rollout.candidate} against {rollout.target}, {rollout.state} at "
            f"step {rollout.step + 1}/{len(rollout.steps)} ({rollout.share}%), revision "
            f"{rollout.seq} by {rollout.actor} [{rollout_id(rollout)}]")


def reason_text(reason: Any) -> str:
    fields = thawed(reason) if not isinstance(reason, str) else {"rule": reason}
    code = fields.get("rule") or fields.get("code") or "?"
    rest = ", ".join(f"{k} {v}" for k, v in sorted(fields.items()) if k not in ("rule", "code"))
    return f"{code}" + (f" ({rest})" if rest else "")


@click.group("release", cls=ToolkeeperGroup)
def release_group() -> None:
    """Progressive rollouts of a tool version: a share of principals, step by step."""


@release_group.command("start")
@click.argument("tool")
@click.argument("version")
@click.option("--policy", "policy_path", required=True, metavar="FILE",
              help="The health-window policy each interval's windows are judged under.")
@click.option("--evidence", "evidence_path", required=True, metavar="BUNDLE",
              help="The pre-rollout evidence bundle (`toolkeeper gate bundle`).")
@click.option("--steps", "steps_text", default="5,25,50,100", show_default=True,
              metavar="P,P,...", help="The candidate's share at each step, percent, to 100.")
@click.option("--interval", "interval_text", default="5m", show_default=True,
              metavar="DURATION", help="How long each evaluation interval lasts (30s, 5m, 1h).")
@click.option("--max-holds", type=click.IntRange(1, 1000), default=6, show_default=True,
              help="Consecutive holds at one step after which the rollout halts.")
@click.option("--target", "target_text", default=None, metavar="VERSION",
              help="The rollback target (default: the newest active version below VERSION).")
@click.option("--health-since", default="1h", show_default=True, metavar="TIME|AGE",
              help="The start of the target's call-log window that must be healthy.")
@click.option("--handlers", "handler_refs", multiple=True, metavar="MODULE:ATTR",
              help="Handler modules for a native tool's artifact, as `serve --handlers`.")
@click.option("--demo", is_flag=True, help="The demo estate's handlers too.")
@actor_option
@registry_options
def start_cmd(tool: str, version: str, policy_path: str, evidence_path: str, steps_text: str,
              interval_text: str, max_holds: int, target_text: str | None, health_since: str,
              handler_refs: tuple[str, ...], demo: bool, actor: str | None,
              registry_url: str | None, config_path: str | None, as_json: bool) -> None:
    """Start rolling TOOL VERSION out against the version in force."""
    try:
        plan = plan_start(policy_path, evidence_path, steps_text, interval_text,
                          max_holds=max_holds, health_since=health_since,
                          handler_refs=handler_refs, demo=demo, actor=actor,
                          config_path=config_path)
        candidate = Version.parse(version)
        url = registry_url_of(registry_url, config_path)
    except ToolkeeperError as exc:
        _fail(exc, as_json)
    with open_book(url, config_path, as_json) as (registry, _):
        target = _target(registry, tool, candidate, target_text)
        stored = start_rollout(registry, url, plan, tool, candidate, target)
    if as_json:
        echo_json(rollout_json(stored))
    else:
        click.echo(f"started {rollout_line(stored)}")


def _operation(name: str, method: str, summary: str) -> None:
    @release_group.command(name, help=summary)
    @click.argument("tool")
    @actor_option
    @registry_options
    def command(tool: str, actor: str | None, registry_url: str | None,
                config_path: str | None, as_json: bool) -> None:
        with open_book(registry_url, config_path, as_json) as (_, book):
            moved: Rollout = getattr(book, method)(tool, actor=actor_of(actor))
        if as_json:
            echo_json(rollout_json(moved))
        else:
            click.echo(rollout_line(moved))


_operation("pause", "pause", "Keep TOOL's routing as at its step; no evaluation.")
_operation("resume", "resume", "Evaluate TOOL's paused or halted rollout again.")
_operation("promote", "promote_step", "Move TOOL's rollout to its next step (past the last: "
           "the candidate is the version in force).")
_operation("abort", "abort", "End TOOL's rollout: every principal back on the target, the "
           "candidate deprecated.")


@release_group.command("history")
@click.argument("tool")
@registry_options
def history_cmd(tool: str, registry_url: str | None, config_path: str | None,
                as_json: bool) -> None:
    """Every rollout of TOOL, oldest first, with its decisions."""
    with open_book(registry_url, config_path, as_json) as (_, book):
        history = book.history(tool)
    if as_json:
        echo_json({"tool": tool, "rollouts": [
            {**rollout_json(r), "decisions": [decision_json(d) for d in ds]}
            for r, ds in history]})
        return
    if not history:
        click.echo(f"{tool}: no rollout")
    for rollout, decisions in history:
        click.echo(rollout_line(rollout))
        for d in decisions:
            click.echo(f"  {d.at_us} step {d.step + 1} ({d.share}%): {d.outcome} -> "
                       f"{d.state_after}")


def register(group: click.Group) -> None:
    """Add the ``release`` group to ``group``."""
    group.add_command(release_group)
