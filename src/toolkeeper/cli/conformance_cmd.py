"""``toolkeeper conformance run``: replay the conformance transcripts against an endpoint.

``(--url URL | --stdio CMD | --app)``: a Streamable HTTP URL, a command serving MCP on stdio
(one string, split as a shell would; words after ``--`` are appended as they are), or
toolkeeper's demo gateway in process (no socket). ``--era auto|modern|legacy`` names the era
to test (the dated names are aliases; ``auto``: the era SPEC 5.1's fallback selects, then
every other era the target proves it serves); ``--transcripts DIR`` replaces the built-in corpus with
an estate-specific set; ``--tool`` names the tool the cases call (default: a read-only tool
the target lists); ``--capability-tool`` one that refuses callers without a client capability
(the -32021 case); a ``--tool`` the target does not list is a usage error. ``--json`` prints the
report object; ``--markdown FILE`` writes it as a page. Every live case names its requirement
(spec file and section) and level: a broken MUST is a ``fail``, a SHOULD a ``warn``, what the
official SDK does beyond the text a ``note``; recorded cases are self-checks of the harness,
counted apart. Progress goes to stderr on a terminal only. Exit 0 without a fail, 1 on any fail
(``--strict``: also on any warn), 2 when the target cannot be reached, serves neither era, does
not serve the era named, or the input is refused.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import click

from toolkeeper.cli.output import EXIT_BAD_INPUT, echo_json, fail
from toolkeeper.cli.targets import (
    ERA_ALIASES,
    TOKEN_ENV,
    era_option,
    stdio_argv,
    stdio_option,
    url_option,
)
from toolkeeper.cli.usage import ToolkeeperGroup
from toolkeeper.client import Target
from toolkeeper.conformance import (
    Report,
    RunOptions,
    builtin_corpus,
    load_directory,
    run_transcripts,
)
from toolkeeper.conformance.render import progress_line, render_markdown, summary_line
from toolkeeper.errors import ToolkeeperError

__all__ = ["conformance", "demo_target", "register"]

EXIT_FAILED = 1
APP_LABEL = "app:toolkeeper-demo"


def demo_target() -> Target:
    """toolkeeper's demo gateway (memory registry, demo estate and handlers), in process."""
    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_app

    registry = Registry.open("memory:")
    install_demo(registry)
    app, _ = build_app(registry, demo_handlers())
    return Target.from_asgi(app)


_RUN_ERA: Final = {"auto": "auto", **{era: dated for dated, era in ERA_ALIASES.items()}}
"""``--era`` -> the era name the harness runs and reports by (its dated version)."""


def _target(url: str | None, stdio: str | None, app: bool, words: Sequence[str] = ()
            ) -> tuple[Target, str]:
    chosen = [flag for flag, given in (("--url", url), ("--stdio", stdio is not None),
                                       ("--app", app)) if given]
    if len(chosen) != 1:
        raise ToolkeeperError("give exactly one of --url, --stdio and --app",
                              code="cli.bad_target")
    if words and stdio is None:
        raise ToolkeeperError("words after -- are the --stdio command's: give --stdio",
                              code="cli.bad_target")
    if url is not None:
        return Target.from_url(url), url
    if stdio is not None:
        try:
            argv = stdio_argv(stdio, words)
        except ToolkeeperError as exc:
            raise ToolkeeperError(exc.message, code="cli.bad_target") from None
        return Target.from_stdio(argv), " ".join([stdio, *words]).strip()
    return demo_target(), APP_LABEL


def _report(url: str | None, stdio: str | None, app: bool, options: RunOptions,
            transcripts: Path | None, words: Sequence[str] = ()) -> Report:
    target, label = _target(url, stdio, app, words)
    corpus = builtin_corpus() if transcripts is None else load_directory(transcripts)
    on_case = (lambda case: click.echo(progress_line(case), err=True)) \
        if sys.stderr.isatty() else None
    return asyncio.run(run_transcripts(target, corpus, options, label=label, on_case=on_case))


@click.group("conformance", cls=ToolkeeperGroup)
def conformance() -> None:
    """The conformance harness (SPEC 5): wire transcripts against any MCP endpoint."""


@conformance.command("run")
@click.argument("words", nargs=-1, metavar="[-- CMD ARG...]")
@url_option()
@stdio_option()
@click.option("--app", is_flag=True, help="toolkeeper's demo gateway, in process.")
@era_option("The era to test; auto: every era the target serves.")
@click.option("--transcripts", type=click.Path(path_type=Path), default=None, metavar="DIR",
              help="Run these transcripts instead of the built-in corpus.")
@click.option("--tool", default=None, metavar="NAME",
              help="The tool cases call (default: a read-only tool the target lists).")
@click.option("--capability-tool", default=None, metavar="NAME",
              help="A tool that refuses callers without a client capability (the -32021 "
                   "case; skipped without one).")
@click.option("--token", envvar=TOKEN_ENV, default=None, metavar="T",
              help=f"Bearer token for HTTP (env {TOKEN_ENV}).")
@click.option("--strict", is_flag=True, help="A warn (a broken SHOULD) also exits 1.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Also write the report as Markdown.")
def run_cmd(words: tuple[str, ...], url: str | None, stdio: str | None, app: bool, era: str,
            transcripts: Path | None, tool: str | None, capability_tool: str | None,
            token: str | None, strict: bool, as_json: bool, markdown: Path | None) -> None:
    """Replay the transcripts against one endpoint and report every case."""
    options = RunOptions(era=_RUN_ERA[era], tool=tool, token=token,
                         capability_tool=capability_tool)
    try:
        report = _report(url, stdio, app, options, transcripts, words)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json, code=EXIT_BAD_INPUT)
    if markdown is not None:
        try:
            markdown.write_text(render_markdown(report), encoding="utf-8")
        except OSError as exc:
            fail(ToolkeeperError(f"--markdown: cannot write the file ({type(exc).__name__})",
                                 code="cli.bad_output"), as_json=as_json)
    _print(report, as_json)
    if report.eras and era != "auto":
        raise SystemExit(EXIT_BAD_INPUT)  # the era named is one the target does not serve
    raise SystemExit(report.exit_code(strict))


def _print(report: Report, as_json: bool) -> None:
    if as_json:
        echo_json(report.to_json())
        return
    for case in report.cases:
        if case.outcome in ("fail", "warn", "note"):
            click.echo(progress_line(case))
    for verdict in report.eras:
        click.echo(f"{verdict.verdict}  {verdict.era}: {verdict.reason}")
    click.echo(summary_line(report))


def register(group: click.Group) -> None:
    group.add_command(conformance)
