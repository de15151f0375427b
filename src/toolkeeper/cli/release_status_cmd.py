"""``toolkeeper release status TOOL [--json]`` (docs/rollouts.md): a tool's rollout (the one not
over, else its most recent), every decision the gate took on it, step by step, and the last
decision's verdicts on the health windows as its signed statement holds them, measured value
and threshold beside each, then its other reasons that did not pass. ``--json``: the rollout,
``decisions`` (their count), ``steps`` (each decision's step, share, outcome and the state it
moved the rollout to), ``windows`` (the last decision's window verdicts) and ``lastDecision``.
Exit 0; 2 for a tool without a rollout (``release.not_found``) or bad input."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import click

from toolkeeper.cli.output import echo_json
from toolkeeper.cli.release_cmds import (
    decision_json,
    open_book,
    reason_text,
    registry_options,
    release_group,
    rollout_json,
    rollout_line,
)
from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry.rollout_rows import thawed
from toolkeeper.registry.rollouts import RolloutDecision

__all__ = ["register", "status_cmd", "window_verdicts"]


def window_verdicts(decision: RolloutDecision) -> list[dict[str, Any]]:
    """The health-window reasons of ``decision``'s signed statement (empty when its envelope
    does not hold a readable statement)."""
    envelope: Mapping[str, Any] = thawed(decision.envelope)
    try:
        statement = json.loads(base64.b64decode(envelope.get("payload", ""), validate=True))
        reasons = statement["predicate"]["reasons"]
    except (ValueError, binascii.Error, KeyError, TypeError):
        return []
    return [r for r in reasons if isinstance(r, dict) and r.get("section") == "healthWindows"]


def _step(decision: RolloutDecision) -> dict[str, Any]:
    return {"step": decision.step, "share": decision.share, "outcome": decision.outcome,
            "stateAfter": decision.state_after, "atUs": decision.at_us}


@click.command("status")
@click.argument("tool")
@registry_options
def status_cmd(tool: str, registry_url: str | None, config_path: str | None,
               as_json: bool) -> None:
    """TOOL's rollout: its record, share and state, each decision, and the last one's
    window verdicts and reasons."""
    with open_book(registry_url, config_path, as_json) as (_, book):
        rollout = book.get(tool)
        if rollout is None:
            raise ToolkeeperError(f"{tool} has no rollout", code="release.not_found",
                                  data={"tool": tool})
        decisions = book.decisions(rollout)
    last = decisions[-1] if decisions else None
    windows = window_verdicts(last) if last is not None else []
    if as_json:
        echo_json({"rollout": rollout_json(rollout), "decisions": len(decisions),
                   "steps": [_step(d) for d in decisions], "windows": windows,
                   "lastDecision": decision_json(last) if last else None})
        return
    click.echo(rollout_line(rollout))
    click.echo(f"  holds {rollout.holds}/{rollout.max_holds}, interval {rollout.interval_s}s, "
               f"steps {','.join(map(str, rollout.steps))}")
    if last is None:
        click.echo("  no decision yet")
        return
    for decision in decisions:
        click.echo(f"  step {decision.step + 1} ({decision.share}%): {decision.outcome} -> "
                   f"{decision.state_after}")
    click.echo(f"  last decision's windows (step {last.step + 1}, {last.share}%):")
    for verdict in windows:
        click.echo(f"    {verdict.get('rule')} {verdict.get('status')}: measured "
                   f"{verdict.get('measured')}, threshold {verdict.get('threshold')}")
    others = [r for r in last.reasons if thawed(r).get("section") != "healthWindows"]
    for reason in others:
        click.echo(f"    {reason_text(reason)}")


def register(group: click.Group) -> None:
    del group
    release_group.add_command(status_cmd)
