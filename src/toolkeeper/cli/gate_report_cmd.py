"""``toolkeeper gate report BUNDLE --html FILE [--decision FILE] [--matrix FILE]`` (docs/gate.md):
one self-contained HTML page of the gate's decision on an evidence bundle, its reasons, each
section's evidence, the health windows drawn and the compatibility matrix.
``toolkeeper gate report --rollout TOOL [--registry URL] --html FILE``: the page of TOOL's
rollout (the one not over, else the most recent) and every decision the gate took on it, each
envelope checked under the same trusted keys (none: read, not checked;
:mod:`toolkeeper.gate.report_rollout`). A tool without a rollout is ``release.not_found``;
BUNDLE with ``--rollout``, or ``--decision``/``--matrix`` with it, ``cli.option_conflict``;
neither BUNDLE nor ``--rollout``, ``cli.option_missing`` (all exit 2).

The bundle is verified first: a refused bundle (a digest that does not hold, a malformed,
unknown, missing or unredacted section) exits 2 with every refusal's code and path. The decision
is read from ``--decision FILE`` (it must be the decision on this bundle:
``gate.decision_mismatch`` when its ``evidenceDigest`` is another's), else made by the gate
under the keys ``gate evaluate`` trusts (``--config``'s ``[gate]``, the environment, ``--trust
ID=FILE``). Exit codes: 0 written, 2 bad input (also ``gate.needs_matplotlib`` without
matplotlib, ``cli.bad_output`` when FILE cannot be written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolkeeper.cli.documents import read_document
from toolkeeper.cli.gate_decide_cmd import CONFIG_OPTION, DEMO_KEY_OPTION, TRUST_OPTION, keys
from toolkeeper.cli.output import echo_json, fail
from toolkeeper.cli.release_cmds import open_book
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.decision import OUTCOMES, decide
from toolkeeper.gate.evidence import verify_bundle
from toolkeeper.gate.report import render
from toolkeeper.gate.report_charts import require_matplotlib
from toolkeeper.gate.report_rollout import render_rollout
from toolkeeper.registry.location import ENV_VAR

__all__ = ["register", "report_cmd"]

@click.command("report")
@click.argument("bundle_path", metavar="[BUNDLE]", required=False)
@click.option("--rollout", "rollout_tool", default=None, metavar="TOOL",
              help="Report TOOL's rollout and its decisions instead of a bundle.")
@click.option("--registry", "registry_url", envvar=ENV_VAR, default=None, metavar="URL",
              help=f"With --rollout: the registry (env {ENV_VAR}; default: registry.url of "
                   "--config, else the user data dir's).")
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False,
              path_type=Path), metavar="FILE", help="Write the HTML report here.")
@click.option("--decision", "decision_path", default=None, metavar="FILE",
              help="The decision on BUNDLE (`gate evaluate --json`); default: decide now.")
@click.option("--matrix", "matrix_path", default=None, metavar="FILE",
              help="The compatibility matrix to show (JSON).")
@CONFIG_OPTION
@TRUST_OPTION
@DEMO_KEY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the result (or error) as JSON.")
def report_cmd(bundle_path: str | None, rollout_tool: str | None, registry_url: str | None,
               html_path: Path, decision_path: str | None, matrix_path: str | None,
               config_path: str | None, trust: tuple[str, ...], demo_key: bool,
               as_json: bool) -> None:
    """Write the HTML report of an evidence bundle and its decision, or of a rollout: 0
    written, 2 bad input."""
    if rollout_tool is not None:
        _rollout_report(rollout_tool, bundle_path, decision_path, matrix_path, registry_url,
                        html_path, config_path, trust, demo_key, as_json)
        return
    try:
        if bundle_path is None:
            raise ToolkeeperError("give an evidence BUNDLE, or --rollout TOOL",
                                  code="cli.option_missing", data={"option": "BUNDLE"})
        require_matplotlib()
        bundle = _bundle(bundle_path)
        decision = (_decided(bundle, config_path, trust, demo_key) if decision_path is None
                    else _decision(read_document(decision_path), bundle))
        matrix = None if matrix_path is None else _matrix(read_document(matrix_path))
        page = render(bundle, decision, matrix)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    _write(html_path, page, as_json)
    if as_json:
        echo_json({"html": str(html_path), "outcome": decision.get("outcome"),
                   "evidenceDigest": bundle.get("digest")})
    else:
        click.echo(f"wrote {html_path}: decision {decision.get('outcome')}")


def _write(html_path: Path, page: str, as_json: bool) -> None:
    try:
        html_path.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(ToolkeeperError(f"--html: cannot write the file ({type(exc).__name__})",
                             code="cli.bad_output", data={"option": "--html"}), as_json=as_json)


def _rollout_report(tool: str, bundle_path: str | None, decision_path: str | None,
                    matrix_path: str | None, registry_url: str | None, html_path: Path,
                    config_path: str | None, trust: tuple[str, ...], demo_key: bool,
                    as_json: bool) -> None:
    """``--rollout TOOL``: the page of TOOL's rollout, every envelope checked under the
    trusted keys."""
    given = [name for name, value in (("BUNDLE", bundle_path), ("--decision", decision_path),
                                      ("--matrix", matrix_path)) if value is not None]
    try:
        if given:
            raise ToolkeeperError(f"--rollout reports a rollout from the registry: "
                                  f"{', '.join(given)} cannot be given with it",
                                  code="cli.option_conflict",
                                  data={"options": ["--rollout", *given]})
        _, trusted = keys(config_path, trust, demo_key)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    with open_book(registry_url, config_path, as_json) as (_, book):
        rollout = book.get(tool)
        if rollout is None:
            raise ToolkeeperError(f"{tool} has no rollout", code="release.not_found",
                                  data={"tool": tool})
        decisions = book.decisions(rollout)
        page = render_rollout(rollout, decisions, trusted)
    _write(html_path, page, as_json)
    last = decisions[-1] if decisions else None
    if as_json:
        echo_json({"html": str(html_path), "tool": tool, "state": rollout.state,
                   "decisions": len(decisions),
                   "lastOutcome": last.outcome if last is not None else None})
    else:
        click.echo(f"wrote {html_path}: rollout of {tool} {rollout.state}, "
                   f"{len(decisions)} decision(s)")


def _bundle(path: str) -> dict[str, Any]:
    """The bundle in ``path``, every digest verified (the first refusal raised, all in data)."""
    value = read_document(path)
    refusals = verify_bundle(value)
    if refusals:
        first = refusals[0]
        listed = "; ".join(f"{r['path']}: {r['code']}" for r in refusals)
        raise ToolkeeperError(f"{path}: the evidence bundle is refused: {listed}",
                              code=first["code"], path=first["path"],
                              data={"refusals": refusals})
    assert isinstance(value, dict)  # verify_bundle refuses anything else
    return value


def _decision(value: Any, bundle: dict[str, Any]) -> dict[str, Any]:
    """A decision file's JSON: an object with a known outcome, made on ``bundle``."""
    if not isinstance(value, dict) or value.get("outcome") not in OUTCOMES:
        raise ToolkeeperError(f"--decision: not a gate decision (outcome one of "
                              f"{', '.join(OUTCOMES)})", code="gate.decision_invalid",
                              path="$.outcome")
    if value.get("evidenceDigest") != bundle["digest"]:
        raise ToolkeeperError("--decision: the decision was made on another bundle (its "
                              "evidenceDigest is not the bundle's digest)",
                              code="gate.decision_mismatch", path="$.evidenceDigest",
                              data={"bundle": bundle["digest"],
                                    "decision": value.get("evidenceDigest")})
    return value


def _matrix(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolkeeperError("--matrix: not a compatibility matrix (a JSON object)",
                              code="gate.matrix_invalid", path="$")
    return value


def _decided(bundle: dict[str, Any], config_path: str | None, trust: tuple[str, ...],
             demo_key: bool) -> dict[str, Any]:
    """The gate's decision on ``bundle``, under the keys ``gate evaluate`` trusts with the
    same ``--config``, ``--trust`` and ``--demo-key``: the one place this command decides."""
    _, trusted = keys(config_path, trust, demo_key)
    return decide(bundle, trusted).to_dict()


def register(group: click.Group) -> None:
    """Add ``report`` to the ``gate`` group."""
    group.add_command(report_cmd)
