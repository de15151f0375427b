"""``toolkeeper conformance sdk-diff`` and ``toolkeeper conformance proxy``: the harness's
evidence runs, in the style of ``conformance run`` (they join its click group).

``sdk-diff [--sdk python|python1|typescript|toolkeeper ...] [--role application|intermediary]
[--fixture NAME ...] [--policy FILE] [--json] [--markdown FILE]``: the high-risk fixtures'
answers served to the real SDK clients (and toolkeeper's own) from a replay origin (toolkeeper's demo gateway
answering the handshakes) on 127.0.0.1, judged by the policy for the role. An SDK that is not
installed is skipped with the reason, except under ``CI=true``, where that is a setup failure.
Exit 0 when the policy accepts every run, 1 when it refuses one, 2 on a setup failure (an SDK
missing under CI, none installed, an unknown fixture, a bad policy file).

``proxy (--url URL | --app) [--config correct|faulty|PATH] [--content-type TYPE ...]
[--accept TYPE ...] [--json] [--markdown FILE]``: proxy evidence through a real nginx started
on 127.0.0.1 in front of the origin (``--app``: the demo gateway, served on 127.0.0.1, with a
call of one of its tools added to the default exchanges). ``--content-type`` and ``--accept``
are the deployment's assertions (the media types an egress body may have; the media types
every hop's ``Accept`` must list). The report lists every finding and, once each, the distinct
``issues``; an origin that does not speak the modern era is one ``origin.not_modern`` finding,
and no hop is blamed. Exit 0
without findings, 1 with any, 2 on a setup failure (nginx missing or not starting, an
unreadable configuration, no origin).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import click

from toolkeeper.cli.conformance_cmd import conformance
from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, echo_json, fail
from toolkeeper.conformance import (
    CONFIGS,
    DEFAULT_EXCHANGES,
    ROLES,
    DeploymentAssertions,
    Host,
    ProxyReport,
    SdkDiffReport,
    load_policy,
    modern_request,
    run_proxy_evidence,
    run_sdk_diff,
    sdk_fixtures,
)
from toolkeeper.conformance.render_evidence import (
    proxy_markdown,
    proxy_summary,
    sdk_diff_markdown,
    sdk_diff_summary,
)
from toolkeeper.conformance.sdk_clients import SDKS
from toolkeeper.errors import ConformanceError, ToolkeeperError

__all__ = ["DEMO_EXCHANGES", "proxy_cmd", "register", "sdk_diff_cmd"]


def _demo_app() -> Any:
    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_app

    registry = Registry.open("memory:")
    install_demo(registry)
    app, _ = build_app(registry, demo_handlers())
    return app


@contextmanager
def _serve(app: Any) -> Iterator[str]:
    from toolkeeper.transports import serve_in_thread

    with serve_in_thread(app) as running:
        yield running.url


DEMO_HOST = Host(_demo_app, _serve)
"""Replay origins on toolkeeper's demo gateway, served on an ephemeral 127.0.0.1 port."""

DEMO_EXCHANGES: Final = (*DEFAULT_EXCHANGES, modern_request(
    "golden-tools-call", "tools/call",
    {"name": "payments.lookup", "arguments": {"reference": "PMT-771"}}, request_id=4))
"""``proxy --app``'s exchanges: the defaults (any origin answers them) and a call of a demo
tool whose success answer carries ``"isError":false``, so a proxy rewriting a success body
(the faulty configuration's ``sub_filter``) is seen on a 200, not only on an error page."""


def _write(markdown: Path | None, render: Callable[[], str], as_json: bool) -> None:
    if markdown is None:
        return
    try:
        markdown.write_text(render(), encoding="utf-8")
    except OSError as exc:
        fail(ToolkeeperError(f"--markdown: cannot write the file ({type(exc).__name__})",
                             code="cli.bad_output"), as_json=as_json)


def _sdk_diff(sdks: tuple[str, ...], role: str, fixtures: tuple[str, ...],
              policy: Path | None) -> SdkDiffReport:
    chosen = sdks or tuple(SDKS)
    report = run_sdk_diff(DEMO_HOST, chosen, role, load_policy(policy),
                          sdk_fixtures(fixtures) if fixtures else None,
                          require=os.environ.get("CI") == "true")
    if not any(run.skipped is None for run in report.runs):
        raise ConformanceError("no SDK could run: none of them is installed",
                               code="conformance.sdk_missing", data={"sdks": list(chosen)})
    return report


@click.command("sdk-diff")
@click.option("--sdk", "sdks", multiple=True, type=click.Choice(sorted(SDKS)),
              help="An SDK to run (repeatable; default: all).")
@click.option("--role", type=click.Choice(ROLES), default="application", show_default=True,
              help="The role the policy judges for.")
@click.option("--fixture", "fixtures", multiple=True, metavar="NAME",
              help="Only this fixture (repeatable; default: every high-risk fixture).")
@click.option("--policy", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="A policy file instead of the shipped one.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Also write the report as Markdown.")
def sdk_diff_cmd(sdks: tuple[str, ...], role: str, fixtures: tuple[str, ...],
                 policy: Path | None, as_json: bool, markdown: Path | None) -> None:
    """Serve the high-risk fixtures to the real SDKs and report what each changed."""
    try:
        report = _sdk_diff(sdks, role, fixtures, policy)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json, code=EXIT_BAD_INPUT)
    _write(markdown, lambda: sdk_diff_markdown(report), as_json)
    if as_json:
        echo_json({**report.to_json(), "digest": report.digest})
    else:
        for run in report.runs:
            if run.refused:
                click.echo(f"REFUSED  {run.fixture}  {run.label or run.sdk}: "
                           f"{', '.join(run.refused)}")
        click.echo(sdk_diff_summary(report))
    raise SystemExit(EXIT_REFUSED if report.refused else 0)


def _proxy(origin: str | None, app: bool, config: str,
           assertions: DeploymentAssertions | None = None) -> ProxyReport:
    if (origin is None) == (not app):
        raise ToolkeeperError("give exactly one of --url and --app", code="cli.bad_target")
    chosen: str | Path = config if config in CONFIGS else Path(config)
    if origin is not None:
        return run_proxy_evidence(origin, chosen, assertions=assertions)
    with _serve(_demo_app()) as url:
        return run_proxy_evidence(url, chosen, DEMO_EXCHANGES, assertions=assertions)


def _assertions(content_types: tuple[str, ...], accept: tuple[str, ...]
                ) -> DeploymentAssertions | None:
    for value in (*content_types, *accept):
        if not value or "/" not in value or any(c in value for c in "\r\n,;"):
            raise ToolkeeperError(f"not a media type: {value!r}", code="cli.bad_media_type",
                                  data={"value": value})
    if not content_types and not accept:
        return None
    return DeploymentAssertions(tuple(content_types) or None, tuple(accept) or None)


@click.command("proxy")
@click.option("--url", "--origin", "origin", default=None, metavar="URL",
              help="The origin's MCP endpoint (--origin is the former spelling).")
@click.option("--app", is_flag=True, help="toolkeeper's demo gateway as the origin.")
@click.option("--config", default="correct", show_default=True, metavar="correct|faulty|PATH",
              help="A shipped nginx configuration by name, or a template file.")
@click.option("--content-type", "content_types", multiple=True, metavar="TYPE",
              help="A media type an egress body may have (repeatable; the deployment's "
                   "assertion).")
@click.option("--accept", "accept", multiple=True, metavar="TYPE",
              help="A media type every hop's Accept must list (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Also write the report as Markdown.")
def proxy_cmd(origin: str | None, app: bool, config: str, content_types: tuple[str, ...],
              accept: tuple[str, ...], as_json: bool, markdown: Path | None) -> None:
    """Send exchanges through a real nginx in front of the origin and report the findings."""
    try:
        report = _proxy(origin, app, config, _assertions(content_types, accept))
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json, code=EXIT_BAD_INPUT)
    _write(markdown, lambda: proxy_markdown(report), as_json)
    if as_json:
        echo_json({**report.to_json(), "digest": f"sha256:{report.digest()}"})
    else:
        for finding in report.findings:
            click.echo(f"FINDING  {finding.exchange}  {finding.title} [{finding.id}]")
        for issue in report.issues:
            click.echo(f"ISSUE  {issue}")
        click.echo(proxy_summary(report))
    raise SystemExit(EXIT_REFUSED if report.findings else 0)


def register(group: click.Group) -> None:
    """Join ``sdk-diff`` and ``proxy`` to the ``conformance`` group (``group`` is the root)."""
    del group
    conformance.add_command(sdk_diff_cmd)
    conformance.add_command(proxy_cmd)
