"""``toolkeeper serve``: the gateway over Streamable HTTP (default) or stdio.

``--config FILE`` reads the TOML configuration (``docs/configuration.md``); every flag given on
the command line overrides the key it names, and without a file the flags and defaults are
the whole configuration. With no ``auth.methods`` (or ``--auth none``) HTTP requests are the
anonymous local principal, allowed only on a loopback host; a stdio server's principal is
``[auth.stdio]``, else the anonymous local one.

``--demo`` publishes the demo estate into the registry when absent and serves its handlers;
``--estate DIR`` publishes the contract files (JSON or YAML) of a directory when absent;
``--handlers module:attribute`` (or ``path/to/file.py:attribute``) adds your own
:class:`~toolkeeper.server.ToolHandlers`, and publishes the contracts its typed tools derive
through the publish guard (all of them or none: a breaking change without a MAJOR bump is
refused with the guard's rule id and each change's classifier rule id, exit 1). The registry
is ``--registry URL``, else ``TOOLKEEPER_REGISTRY``, else the default SQLite file.
Logs go to stderr (stdout carries the protocol under ``--stdio``), as text or JSON lines.
Once serving, stderr gets ``toolkeeper gateway on URL`` (``stdio``) and the start-up lines of
:mod:`~toolkeeper.cli.serve_banner`; over HTTP ``/healthz`` and ``/readyz`` answer beside the
endpoint and on the metrics listener (:mod:`~toolkeeper.server.health`). With a signing key
(``[gate]``) it evaluates its registry's running rollouts itself, one replica at a time
(``[release]``, :mod:`~toolkeeper.cli.serve_rollouts`).

Only what this process can run is listed and served (:mod:`~toolkeeper.server.runnable`): at
start a warning line names each callable contract without a handler here
(``serve.contract_unbound``) and each handler without a contract
(``serve.handler_uncontracted``); ``--strict`` refuses the start instead
(``serve.estate_unbound``). A start that fails stores nothing: files are read and handler
modules imported before the registry is opened, the HTTP listener is bound and the
configuration checked before anything is published, and everything the start publishes (the
demo estate, the estates, the typed contracts) goes through the guard in one transaction.

Exit codes: 0 after a clean shutdown, 1 the registry refused the demo estate or an estate
contract, or ``--strict`` refused the start; 2 bad input (configuration, registry URL,
handlers reference, estate file, an address that cannot be listened on:
``serve.listen_failed``).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import click

from toolkeeper.cli.documents import read_document
from toolkeeper.cli.handler_refs import load_handlers
from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, fail, fail_refused
from toolkeeper.cli.serve_banner import banner_lines
from toolkeeper.cli.serve_config import AUTH_CHOICES, config_from_flags
from toolkeeper.cli.serve_coverage import Unbound, report_coverage
from toolkeeper.cli.serve_features import ServeFeatures, build_features
from toolkeeper.cli.serve_rollouts import evaluator_keys, start_evaluator
from toolkeeper.cli.serve_upstreams import ServedUpstreams, read_configured
from toolkeeper.config import GatewayConfig, LegacySettings
from toolkeeper.config.definitions import default_of
from toolkeeper.contracts.redaction import set_personal_data_policy
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.errors import PublishRefusedError, ToolkeeperError
from toolkeeper.protocol import SessionTable
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, ToolHandlers, build_gateway
from toolkeeper.server.logs import ACCESS_MODES, configure_logging
from toolkeeper.transports import (
    DEFAULT_ALLOWED_HOSTS,
    DEFAULT_ALLOWED_ORIGINS,
    HttpConfig,
    OriginPolicy,
    RunningServer,
    create_asgi_app,
    run_foreground,
    run_stdio,
)
from toolkeeper.transports.asks import PendingAsks
from toolkeeper.transports.replay import ReplayConfig
from toolkeeper.transports.runner import listen

__all__ = ["install_estate", "read_estate", "register", "serve"]

_LEVELS = ("debug", "info", "warning", "error")
_LOG_FORMATS = ("text", "json")
_LEGACY_SESSIONS = ("stateful", "stateless")
_WILDCARD_HOSTS = ("0.0.0.0", "::", "")
_CONTRACT_SUFFIXES = (".json", ".yaml", ".yml")
_SECONDS = click.FloatRange(min=0, min_open=True, max=86400)
ESTATE_ACTOR = "toolkeeper-serve"


_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*")


def _check_path(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not _PATH.fullmatch(value):
        raise click.BadParameter("must be an absolute URL path such as /mcp")
    return value


def read_estate(directory: Path) -> list[ToolSpec]:
    """Every contract file of ``directory`` (not recursive), parsed, in (name, version) order
    so older versions are published first. A file that is not a contract, or a directory
    without any, is bad input."""
    specs: list[ToolSpec] = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.suffix in _CONTRACT_SUFFIXES:
            try:
                specs.append(spec_from_mapping(read_document(str(path))))
            except ToolkeeperError as exc:
                named = exc.message if str(path) in exc.message else f"{path}: {exc.message}"
                raise ToolkeeperError(f"--estate {named}", code=exc.code, path=exc.path,
                                      data=exc.data) from None
    if not specs:
        raise ToolkeeperError(f"--estate {directory}: no contract files (*.json, *.yaml, *.yml)",
                              code="cli.estate_empty")
    return sorted(specs, key=lambda spec: spec.key)


def install_estate(registry: Registry, specs: Sequence[ToolSpec], *,
                   actor: str = ESTATE_ACTOR) -> list[str]:
    """Publish an estate's contracts (as :func:`read_estate` gives them) through the publish
    guard; returns what was done. One already stored with the same content is left as it is;
    a file changed since its version was published makes the guard refuse
    (``publish.immutable``, the error propagates), as ``toolkeeper publish`` would."""
    done: list[str] = []
    for spec in specs:
        if registry.publish_outcome(spec, actor=actor).created:
            done.append(f"published {spec.name} {spec.version}")
    return done


def _policy(host: str, allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...]
            ) -> OriginPolicy:
    hosts = list(DEFAULT_ALLOWED_HOSTS) + list(allow_hosts)
    if host not in _WILDCARD_HOSTS:
        hosts.append(f"[{host}]:*" if ":" in host else f"{host}:*")
    return OriginPolicy(tuple(dict.fromkeys(hosts)),
                        tuple(dict.fromkeys([*DEFAULT_ALLOWED_ORIGINS, *allow_origins])))


@click.command("serve")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="The TOML configuration (docs/configuration.md); flags override it.")
@click.option("--demo", is_flag=True, help="Publish the demo estate if absent; serve it.")
@click.option("--estate", "estates", multiple=True, metavar="DIR",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Publish the contract files (JSON/YAML) in DIR if absent; repeatable.")
@click.option("--registry", "registry_url", default=None, metavar="URL",
              help="memory:, sqlite:///path.db or postgresql://... "
                   "(default: TOOLKEEPER_REGISTRY, else the user data SQLite file).")
@click.option("--stdio", is_flag=True, help="Serve on stdin/stdout instead of HTTP.")
@click.option("--host", default=default_of("server.host"), show_default=True,
              help="Listen address; one that is not loopback needs --auth keys or jwt.")
@click.option("--port", default=default_of("server.port"), show_default=True,
              type=click.IntRange(0, 65535))
@click.option("--path", default=default_of("server.path"), show_default=True,
              callback=_check_path,
              help="The endpoint path (starts with '/').")
@click.option("--handlers", "handler_refs", multiple=True, metavar="MODULE:ATTR",
              help="A ToolHandlers (or a function returning one) to serve; MODULE may be a "
                   "path/to/file.py; its typed tools' contracts are published through the "
                   "publish guard at start; repeatable.")
@click.option("--strict", is_flag=True,
              help="Refuse to start (exit 1, nothing published) when a contract has no "
                   "handler here or a handler has no contract (otherwise a warning each).")
@click.option("--allow-host", multiple=True, metavar="HOST[:PORT|:*]",
              help="Also accept this Host header (DNS-rebinding allow list); repeatable.")
@click.option("--allow-origin", multiple=True, metavar="SCHEME://HOST[:PORT|:*]",
              help="Also accept this Origin; repeatable.")
@click.option("--json-response", is_flag=True,
              help="Always answer JSON (progress and log notifications are dropped).")
@click.option("--head-timeout", type=_SECONDS, default=default_of("server.head_timeout_s"),
              show_default=True, metavar="SECONDS",
              help="Close a connection whose request head is not complete this long after "
                   "it was accepted or its last response ended.")
@click.option("--idle-timeout", type=_SECONDS, default=default_of("server.idle_timeout_s"),
              show_default=True, metavar="SECONDS",
              help="Close a kept-alive connection silent this long after a response.")
@click.option("--max-connections", type=click.IntRange(min=1),
              default=default_of("server.max_connections"), show_default=True,
              help="Answer 503 and close new connections beyond this many open ones "
                   "(lowered below the open-file limit when that is smaller).")
@click.option("--max-connections-per-ip", type=click.IntRange(min=0),
              default=default_of("server.max_connections_per_ip"), show_default=True,
              help="Answer 503 and close new connections from an address that has this many "
                   "open (0: a quarter of --max-connections); behind a reverse proxy, set it "
                   "to --max-connections.")
@click.option("--backlog", type=click.IntRange(min=1), default=default_of("server.backlog"),
              show_default=True, help="Connections the kernel queues for accepting.")
@click.option("--log-level", type=click.Choice(_LEVELS), default=default_of("logging.level"),
              show_default=True)
@click.option("--log-format", type=click.Choice(_LOG_FORMATS),
              default=default_of("logging.format"), show_default=True,
              help="Text lines, or one JSON object per line (both redacted).")
@click.option("--access-log", type=click.Choice(ACCESS_MODES),
              default=default_of("logging.access"), show_default=True,
              help="HTTP access lines: every request, only answers with status 400 or "
                   "above, or none.")
@click.option("--auth", "auth_methods", multiple=True, type=click.Choice(AUTH_CHOICES),
              help="Credentials accepted over HTTP (keys: API keys in the registry store; "
                   "jwt: configured issuers); repeatable. none: the anonymous local "
                   "principal, loopback hosts only (the default).")
@click.option("--metrics-port", type=click.IntRange(0, 65535),
              default=default_of("metrics.port"), show_default=True,
              help="Serve Prometheus metrics on this port (0: off).")
@click.option("--legacy-sessions", type=click.Choice(_LEGACY_SESSIONS),
              default=default_of("server.legacy_sessions"), show_default=True,
              help="Legacy-era sessions kept per process, or none (served at the header's "
                   "version).")
@click.pass_context
def serve(ctx: click.Context, /, config_path: str | None, **flags: Any) -> None:
    """Run the MCP gateway (both protocol eras on one endpoint)."""
    registry_flag = flags.get("registry_url")
    if registry_flag is not None and not registry_flag.strip():  # never the default store
        fail(ToolkeeperError("--registry is empty (omit it for the default registry)",
                             code="registry.url_invalid", data={"key": "registry.url"}))
    try:
        config = config_from_flags(ctx, config_path)
    except ToolkeeperError as exc:
        fail(exc)
    _serve(config)


def _serve(config: GatewayConfig) -> None:
    stdio = config.server.transport == "stdio"
    if stdio and (sys.stdin is None or sys.stdout is None):
        fail(ToolkeeperError("standard input or output is closed: nothing to serve on",
                             code="serve.stdio_closed"))
    protocol_out = _claim_stdout() if stdio else None
    set_personal_data_policy(config.logging.personal_data, config.logging.personal_keys)
    configure_logging(config.logging.level, sys.stderr,  # every line redacted, uvicorn's too
                      log_format=config.logging.format, access=config.logging.access)
    log = logging.getLogger("toolkeeper.serve")
    sock: socket.socket | None = None
    try:  # estates and handlers are read before the registry is opened: bad input writes
        estate = [(directory, read_estate(Path(directory)))  # nothing
                  for directory in config.estate.dirs]
        loaded = [(reference, load_handlers(reference))
                  for reference in config.estate.handlers]
        configured = read_configured(config.upstreams)
        registry = Registry.open(config.registry.url or None)
        handlers = ToolHandlers()
        batch: list[tuple[str, ToolSpec]] = []
        if config.estate.demo:
            from toolkeeper.demo import demo_contracts, demo_handlers

            batch += [("demo estate", spec) for spec in demo_contracts()
                      if registry.get(spec.name, spec.version) is None]
            handlers.merge(demo_handlers())
        for directory, specs in estate:
            batch += [(f"estate {directory}", spec) for spec in specs]
        for reference, user_handlers in loaded:  # typed tools' contracts
            batch += [(f"handlers {reference}", spec) for spec in user_handlers.contracts()]
            handlers.merge(user_handlers)
        features = build_features(config, registry, stdio=stdio)
        rollout_keys = evaluator_keys(config)  # a key named but unusable refuses the start
        if not stdio:  # the listener is bound before anything is published
            sock = _bind(config)
        upstreams = ServedUpstreams(registry, configured, log)
        report_coverage(registry, [spec for _, spec in batch], handlers,
                        strict=config.estate.strict, log=log, also=upstreams.owned())
        _publish(registry, batch, demo=config.estate.demo, log=log)
        forwarded = upstreams.prepare()
        if forwarded is not None and features.observability.metrics is not None:
            features.observability.metrics.watch_upstreams(upstreams.metric_rows)
        features.health.estate_loaded()
    except PublishRefusedError as exc:
        fail_refused(exc)
    except (ToolkeeperError, ValueError) as exc:
        if sock is not None:
            sock.close()
        fail(exc if isinstance(exc, ToolkeeperError) else str(exc),
             code=EXIT_REFUSED if isinstance(exc, Unbound) else EXIT_BAD_INPUT)
    gateway = build_gateway(registry, handlers, call_log=features.observability.call_log,
                            resolve_principal=features.resolver, limits=features.limits,
                            legacy_sessions=config.server.legacy_sessions,
                            sessions=_sessions(config.legacy),
                            sealer=features.sealer,
                            list_page_size=config.server.list_page_size,
                            list_cursor_ttl_s=config.server.list_cursor_ttl_s,
                            request_state_ttl_s=config.sealing.request_state_ttl_s,
                            max_reported_errors=config.server.max_reported_errors,
                            sources=() if forwarded is None else (forwarded,))
    if features.sealer.ephemeral_key:
        log.warning("no sealing key configured (sealing.keys_file or %s): sealing with a "
                    "random key of this process; its cursors and request state resume only "
                    "here, until it stops", config.sealing.keys_env or "sealing.keys_env")
    evaluator = None
    try:
        upstreams.start()
        evaluator = start_evaluator(config, registry, rollout_keys, log=log,
                                    port=None if sock is None else sock.getsockname()[1],
                                    call_log=features.observability.call_log)
        _run(config, gateway, features, protocol_out, log, sock,
             banner=lambda url, metrics: [*banner_lines(config, registry, handlers, url=url,
                                                        metrics_url=metrics),
                                          *upstreams.banner()],
             on_stop=upstreams.aclose)
    finally:
        if evaluator is not None:
            evaluator.stop()  # before the call log and the registry close
        upstreams.stop()
        features.stop()  # writes the last call-log rows: before the registry closes
        registry.close()


def _bind(config: GatewayConfig) -> socket.socket:
    server = config.server
    try:
        return listen(server.host, server.port, server.backlog)
    except OSError as exc:
        raise ToolkeeperError(
            f"cannot listen on {server.host}:{server.port}: {exc.strerror or exc}",
            code="serve.listen_failed",
            data={"host": server.host, "port": server.port}) from None


def _publish(registry: Registry, batch: Sequence[tuple[str, ToolSpec]], *, demo: bool,
             log: logging.Logger) -> None:
    """The demo estate, the estate directories and the handlers' typed contracts, published
    through the publish guard in one transaction (all or none), then the demo's retirement
    of ``db.query`` 3.0.0."""
    outcomes = registry.publish_all([spec for _, spec in batch], actor=ESTATE_ACTOR)
    for (source, spec), outcome in zip(batch, outcomes, strict=True):
        if outcome.created:
            log.info("%s: published %s %s", source, spec.name, spec.version)
    if demo:
        from toolkeeper.demo import install_demo

        for line in install_demo(registry):
            log.info("demo estate: %s", line)


def _run(config: GatewayConfig, gateway: Gateway, features: ServeFeatures,
         protocol_out: BinaryIO | None, log: logging.Logger,
         sock: socket.socket | None = None, *,
         banner: Callable[[str | None, str | None], Sequence[str]],
         on_stop: Callable[[], Awaitable[None]] | None = None) -> None:
    server = config.server
    if protocol_out is not None:
        log.info("serving on stdio")
        for line in banner(None, None):
            click.echo(line, err=True)
        try:
            run_stdio(gateway.kernel, changes=gateway.changes, stdout=protocol_out,
                      on_stop=on_stop, asks=PendingAsks(config.legacy.ask_timeout_s,
                                       config.legacy.max_pending_asks,
                                       max_per_session=config.legacy.max_pending_asks_per_session))
        except OSError as exc:  # the output refused a write: the reader is gone
            fail(ToolkeeperError(f"standard output refused a write: {exc.strerror or exc}",
                                 code="serve.stdout_failed"), code=EXIT_REFUSED)
        log.info("stopped")
        return
    metrics_url = None
    if features.observability.metrics_port is not None:
        host = config.metrics.host
        metrics_url = (f"http://{f'[{host}]' if ':' in host else host}:"
                       f"{features.observability.metrics_port}/metrics")
        log.info("metrics on %s", metrics_url)
    http = HttpConfig(path=server.path,
                      policy=_policy(server.host, server.allowed_hosts, server.allowed_origins),
                      json_response=server.json_response, max_body_bytes=server.max_body_bytes,
                      body_timeout_s=server.body_timeout_s,
                      head_timeout_s=server.head_timeout_s,
                      idle_timeout_s=server.idle_timeout_s,
                      max_connections=server.max_connections,
                      max_connections_per_ip=server.max_connections_per_ip,
                      backlog=server.backlog,
                      documents=dict(features.documents), replay=_replay(config.legacy),
                      probes=features.health,
                      ask_timeout_s=config.legacy.ask_timeout_s,
                      max_pending_asks=config.legacy.max_pending_asks,
                      max_pending_asks_per_session=config.legacy.max_pending_asks_per_session)

    def ready(running: RunningServer) -> None:
        log.info("toolkeeper gateway listening on %s", running.url)
        for line in banner(running.url, metrics_url):  # the first: toolkeeper gateway on URL
            click.echo(line, err=True)

    app = create_asgi_app(gateway.kernel, http, changes=gateway.changes)
    try:  # SIGTERM and SIGINT end it gracefully, with status 0
        run_foreground(features.observability.wrap_app(app), host=server.host,
                       port=server.port, path=server.path, log_level=config.logging.level,
                       on_ready=ready, sock=sock, access=config.logging.access)
    except OSError as exc:
        fail(f"cannot listen on {server.host}:{server.port}: {exc.strerror or exc}",
             code=EXIT_BAD_INPUT)
    log.info("stopped")


def _replay(legacy: LegacySettings) -> ReplayConfig:
    return ReplayConfig(retry_ms=legacy.sse_retry_ms, max_events=legacy.replay_events,
                        max_bytes=legacy.replay_bytes, total_bytes=legacy.replay_total_bytes,
                        resume_window_s=legacy.resume_window_s)


def _sessions(legacy: LegacySettings) -> SessionTable:
    return SessionTable(max_sessions=legacy.max_sessions, max_bytes=legacy.max_session_bytes,
                        max_per_credential=legacy.max_sessions_per_credential,
                        max_bytes_per_credential=legacy.max_session_bytes_per_credential,
                        max_per_tenant=legacy.max_sessions_per_tenant,
                        max_bytes_per_tenant=legacy.max_session_bytes_per_tenant)


def _claim_stdout() -> BinaryIO:
    """For ``--stdio``: keep standard output for protocol messages only. The protocol gets a
    private duplicate of descriptor 1, and descriptor 1 and ``sys.stdout`` then point at
    standard error, so a handler's ``print`` (or a module's, at import) lands in the log
    instead of corrupting the stream."""
    sys.stdout.flush()
    private = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return os.fdopen(private, "wb")


def register(group: click.Group) -> None:
    """Add ``serve`` to ``group``."""
    group.add_command(serve)


def main() -> None:
    """``python -m toolkeeper.cli.serve_cmd``: the command on its own."""
    serve(prog_name="toolkeeper serve")


if __name__ == "__main__":
    main()
