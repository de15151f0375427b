"""``toolkeeper gate demo [--fixed] [--out DIR] [--json]``: seed 004's reference scenario run
for real (:mod:`toolkeeper.cli.gate_demo`), ending in the gate's decision. Exit codes are the
gate's: 0 promote, 1 rollback, 3 halt, 4 hold; 2 when a part it runs is missing (nginx, the
official Python SDK: the message names the package) or fails to start."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from toolkeeper.cli.gate_decide_cmd import OUTCOME_EXIT
from toolkeeper.cli.gate_demo import run_demo
from toolkeeper.cli.output import echo_json, fail
from toolkeeper.errors import ToolkeeperError

__all__ = ["demo_cmd", "register"]


@click.command("demo")
@click.option("--fixed", is_flag=True,
              help="The proxy fixed and a client view that keeps futureHint: the gate promotes.")
@click.option("--out", "out_dir", default=None, metavar="DIR",
              help="Keep the artefacts (registry, bundle.json, decision.dsse.json) in DIR.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def demo_cmd(fixed: bool, out_dir: str | None, as_json: bool) -> None:
    """Run seed 004's scenario for real: 0 promote, 1 rollback, 3 halt, 4 hold, 2 refused."""
    def progress(line: str) -> None:
        click.echo(line, err=True)

    try:
        if out_dir is not None:
            workdir = Path(out_dir)
            workdir.mkdir(parents=True, exist_ok=True)
            if any(workdir.iterdir()):
                raise ToolkeeperError(f"--out {out_dir} is not empty", code="cli.bad_output",
                                      data={"path": out_dir})
            result = run_demo(workdir, fixed, progress)
        else:
            with tempfile.TemporaryDirectory(prefix="toolkeeper-gate-demo-") as scratch:
                result = run_demo(Path(scratch), fixed, progress)
                result["artefacts"] = None
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    if as_json:
        echo_json(result)
    else:
        live, selfcheck = result["transcriptsLive"], result["transcriptsSelfcheck"]
        click.echo(f"transcripts: {result['transcriptsPassed']}/{result['transcriptsTotal']} "
                   f"passed ({live['passed']}/{live['total']} live, {selfcheck['passed']}/"
                   f"{selfcheck['total']} the harness's self-check)")
        click.echo(f"SDK dropped fields: {', '.join(result['sdkDroppedFields']) or 'none'}")
        click.echo(f"proxy issues: {'; '.join(result['proxyIssues']) or 'none'}")
        for name, window in result["healthWindows"].items():
            click.echo(f"health window ({name} {window['version']}): {window['status']}, "
                       f"{window['samples']} samples, {window['errors']} errors")
        click.echo(f"rollback evidence verified: {str(result['rollbackVerified']).lower()}")
        click.echo(f"release action: {result['releaseAction']}")
        click.echo(f"evidence {result['evidenceDigest']}")
    raise SystemExit(OUTCOME_EXIT[result["releaseAction"]])


def register(group: click.Group) -> None:
    group.add_command(demo_cmd)
