"""``toolkeeper release evaluate`` and ``release watch`` (docs/rollouts.md): the release gate
deciding a running rollout's step from the durable call log (:mod:`toolkeeper.gate.canary`).

``evaluate TOOL`` decides now, whether or not the step's interval is up, stores what the
decision moves the rollout to with the signed decision, and exits with the gate's code: 0
promote, 1 rollback, 3 halt, 4 hold; 2 on bad input (no running rollout:
``release.not_running``; no signing key: ``gate.no_signing_key``). ``watch TOOL`` evaluates each
time the step's interval is up, in the foreground, a line per decision, until the rollout is
over or halted (Ctrl-C stops watching and changes nothing); it exits 0 promoted, 1 rolled back
or aborted, 3 halted. Where a gateway evaluates its rollouts itself, one replica at a time, a
decision ``watch`` finds already taken is shown, not taken twice.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

import click

from toolkeeper.cli.gate_decide_cmd import OUTCOME_EXIT, keys
from toolkeeper.cli.output import EXIT_HALT, EXIT_OK, EXIT_REFUSED, echo_json
from toolkeeper.cli.release_cmds import (
    actor_of,
    actor_option,
    decision_json,
    open_book,
    reason_text,
    registry_options,
    registry_url_of,
    release_group,
    rollout_json,
    rollout_line,
)
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.canary import Evaluation, ResourcePeaks, due_at_us, evaluate_and_store
from toolkeeper.gate.keys import SigningKey, require_signer
from toolkeeper.gate.metric_windows import scrape
from toolkeeper.gate.rollback import TrustedKey
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import open_call_rows
from toolkeeper.registry.rollout_book import RolloutBook
from toolkeeper.registry.rollouts import (
    ABORTED,
    HALTED,
    PAUSED,
    PROMOTED,
    ROLLED_BACK,
    RUNNING,
    Rollout,
)

__all__ = ["evaluate_cmd", "register", "watch_cmd"]

_FINAL_EXIT: Final = {PROMOTED: EXIT_OK, ROLLED_BACK: EXIT_REFUSED, ABORTED: EXIT_REFUSED,
                      HALTED: EXIT_HALT}


def _signer(config_path: str | None) -> tuple[SigningKey, Mapping[str, TrustedKey]]:
    signer, trusted = keys(config_path, ())
    return require_signer(signer, "each decision is signed"), trusted


class Readings:
    """The resource readings of a gateway's Prometheus endpoint (``--metrics``), one per look
    (:class:`~toolkeeper.gate.canary.ResourcePeaks`: their highest since a time is what a
    rollout's candidate window judges)."""

    def __init__(self, url: str | None) -> None:
        self._url = url
        self._peaks = ResourcePeaks()

    def take(self) -> None:
        if self._url is not None:
            self._peaks.add(time.time_ns() // 1000,
                            {k: int(v) for k, v in scrape(self._url).resources.items()})

    def peaks(self, since_us: int) -> dict[str, int] | None:
        return self._peaks.since(since_us)


def evaluate_now(registry: Registry, url: str | None, tool: str, signer: SigningKey,
                 trusted: Mapping[str, TrustedKey], actor: str,
                 readings: Readings | None = None) -> Evaluation | None:
    """One evaluation of ``tool``'s running rollout from the call log of the registry at
    ``url`` (and, with ``readings``, the gateway's resources)."""
    rows = open_call_rows(url, read_only=True)
    try:
        return evaluate_and_store(registry, rows, tool, time.time_ns() // 1000, signer,
                                  trusted, actor=actor,
                                  resources=None if readings is None else readings.peaks)
    finally:
        rows.close()


def _decided(evaluation: Evaluation) -> str:
    record, moved = evaluation.record, evaluation.rollout
    return (f"step {record.step + 1} ({record.share}%): {record.outcome} -> "
            f"{rollout_line(moved)}")


_METRICS = click.option("--metrics", "metrics_url", default=None, metavar="URL",
                        help="A gateway's Prometheus endpoint: its resource readings (RSS, "
                             "open descriptors, open streams) for the policy's resource rules.")


@click.command("evaluate")
@click.argument("tool")
@_METRICS
@actor_option
@registry_options
def evaluate_cmd(tool: str, metrics_url: str | None, actor: str | None,
                 registry_url: str | None, config_path: str | None, as_json: bool) -> None:
    """Decide TOOL's rollout step now: 0 promote, 1 rollback, 3 halt, 4 hold."""
    with open_book(registry_url, config_path, as_json) as (registry, _):
        signer, trusted = _signer(config_path)
        readings = Readings(metrics_url)
        readings.take()
        evaluation = evaluate_now(registry, registry_url_of(registry_url, config_path), tool,
                                  signer, trusted, actor_of(actor), readings)
        if evaluation is None:
            raise ToolkeeperError(f"{tool} has no running rollout", code="release.not_running",
                                  data={"tool": tool})
    if as_json:
        echo_json({"rollout": rollout_json(evaluation.rollout),
                   "decision": decision_json(evaluation.record)})
    else:
        click.echo(_decided(evaluation))
        for reason in evaluation.record.reasons:
            click.echo(f"  {reason_text(reason)}")
    raise SystemExit(OUTCOME_EXIT[evaluation.decision.outcome])


def _wait_s(rollout: Rollout, every_s: float) -> float:
    left = due_at_us(rollout) / 1e6 - time.time()
    return max(0.0, min(every_s, left))


@click.command("watch")
@click.argument("tool")
@click.option("--every", "every_s", type=click.FloatRange(0.1, 3600), default=5.0,
              show_default=True, help="Seconds between looks at the rollout.")
@_METRICS
@actor_option
@registry_options
def watch_cmd(tool: str, every_s: float, metrics_url: str | None, actor: str | None,
              registry_url: str | None, config_path: str | None, as_json: bool) -> None:
    """Evaluate TOOL's rollout at each interval until it is over: 0 promoted, 1 rolled back
    or aborted, 3 halted."""
    stop = threading.Event()
    previous = [signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT,
                                                                       signal.SIGTERM)]
    try:
        with open_book(registry_url, config_path, as_json) as (registry, book):
            signer, trusted = _signer(config_path)
            rollout = _watch(registry, registry_url_of(registry_url, config_path), book, tool,
                             every_s, stop, signer, trusted, actor_of(actor), as_json,
                             Readings(metrics_url))
    finally:
        for sig, handler in zip((signal.SIGINT, signal.SIGTERM), previous, strict=True):
            signal.signal(sig, handler)
    if rollout is None or rollout.state in (RUNNING, PAUSED):
        raise SystemExit(EXIT_OK if rollout is None else 130)
    raise SystemExit(_FINAL_EXIT[rollout.state])


def _watch(registry: Registry, url: str | None, book: RolloutBook, tool: str, every_s: float,
           stop: threading.Event,
           signer: SigningKey, trusted: Mapping[str, TrustedKey], actor: str,
           as_json: bool, readings: Readings) -> Rollout | None:
    seen = -1
    while not stop.is_set():
        readings.take()
        rollout: Rollout | None = book.get(tool)
        if rollout is None:
            raise ToolkeeperError(f"{tool} has no rollout", code="release.not_found",
                                  data={"tool": tool})
        decisions = book.decisions(rollout)
        if len(decisions) != seen:  # taken here or by a gateway replica
            for decision in decisions[max(seen, 0):] if seen >= 0 else decisions[-1:]:
                _show(decision_json(decision), rollout, as_json)
            seen = len(decisions)
        if rollout.state not in (RUNNING, PAUSED):
            return rollout
        if rollout.state == RUNNING and _wait_s(rollout, every_s) == 0:
            try:
                if evaluate_now(registry, url, tool, signer, trusted, actor,
                                readings) is not None:
                    continue  # shown on the next look, as a replica's would be
            except ToolkeeperError as exc:
                if exc.code != "release.conflict":  # a replica moved it first
                    raise
        stop.wait(_wait_s(rollout, every_s) if rollout.state == RUNNING else every_s)
    return book.get(tool)


def _show(decision: dict[str, Any], rollout: Rollout, as_json: bool) -> None:
    if as_json:
        echo_json({"decision": decision, "rollout": rollout_json(rollout)})
        return
    click.echo(f"step {decision['step'] + 1} ({decision['share']}%): {decision['outcome']} -> "
               f"{decision['stateAfter']}")


def register(group: click.Group) -> None:
    del group
    release_group.add_command(evaluate_cmd)
    release_group.add_command(watch_cmd)


