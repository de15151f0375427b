"""``toolkeeper serve``: the gateway over Streamable HTTP (default) or stdio.

``--demo`` publishes the demo estate into the registry when absent and serves its handlers;
``--handlers module:attribute`` adds your own :class:`~toolkeeper.server.ToolHandlers`. The
registry is ``--registry URL``, else ``TOOLKEEPER_REGISTRY``, else the default SQLite file.
Logs go to stderr (stdout carries the protocol under ``--stdio``). Exit codes: 0 after a clean
shutdown, 1 the registry refused the demo estate, 2 bad input (registry URL, handlers
reference, unusable address).
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
from typing import Any

import click

from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, fail
from toolkeeper.errors import PublishRefusedError, ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers, build_gateway
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

__all__ = ["register", "serve"]

_LEVELS = ("debug", "info", "warning", "error")
_WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def _load_handlers(reference: str) -> ToolHandlers:
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ToolkeeperError(f"--handlers {reference!r}: expected module:attribute",
                              code="cli.handlers_reference")
    try:
        value: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ToolkeeperError(f"--handlers {reference!r}: {exc}",
                              code="cli.handlers_reference") from None
    if callable(value) and not isinstance(value, ToolHandlers):
        value = value()
    if not isinstance(value, ToolHandlers):
        raise ToolkeeperError(f"--handlers {reference!r} is not a ToolHandlers",
                              code="cli.handlers_reference")
    return value


def _policy(host: str, allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...]
            ) -> OriginPolicy:
    hosts = list(DEFAULT_ALLOWED_HOSTS) + list(allow_hosts)
    if host not in _WILDCARD_HOSTS:
        hosts.append(f"[{host}]:*" if ":" in host else f"{host}:*")
    return OriginPolicy(tuple(dict.fromkeys(hosts)),
                        tuple(dict.fromkeys([*DEFAULT_ALLOWED_ORIGINS, *allow_origins])))


@click.command("serve")
@click.option("--demo", is_flag=True, help="Publish the demo estate if absent; serve it.")
@click.option("--registry", "registry_url", default=None, metavar="URL",
              help="memory:, sqlite:///path.db or postgresql://... "
                   "(default: TOOLKEEPER_REGISTRY, else the user data SQLite file).")
@click.option("--stdio", is_flag=True, help="Serve on stdin/stdout instead of HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--path", default="/mcp", show_default=True, help="The endpoint path.")
@click.option("--handlers", "handler_refs", multiple=True, metavar="MODULE:ATTR",
              help="A ToolHandlers (or a function returning one) to serve; repeatable.")
@click.option("--allow-host", multiple=True, metavar="HOST[:PORT|:*]",
              help="Also accept this Host header (DNS-rebinding allow list); repeatable.")
@click.option("--allow-origin", multiple=True, metavar="SCHEME://HOST[:PORT|:*]",
              help="Also accept this Origin; repeatable.")
@click.option("--json-response", is_flag=True,
              help="Always answer JSON (progress and log notifications are dropped).")
@click.option("--log-level", type=click.Choice(_LEVELS), default="info", show_default=True)
def serve(demo: bool, registry_url: str | None, stdio: bool, host: str, port: int, path: str,
          handler_refs: tuple[str, ...], allow_host: tuple[str, ...],
          allow_origin: tuple[str, ...], json_response: bool, log_level: str) -> None:
    """Run the MCP gateway (both protocol eras on one endpoint)."""
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("toolkeeper.serve")
    try:
        registry = Registry.open(registry_url)
        handlers = ToolHandlers()
        if demo:
            from toolkeeper.demo import demo_handlers, install_demo

            for line in install_demo(registry):
                log.info("demo estate: %s", line)
            handlers.merge(demo_handlers())
        for reference in handler_refs:
            handlers.merge(_load_handlers(reference))
    except PublishRefusedError as exc:
        fail(exc, code=EXIT_REFUSED)
    except (ToolkeeperError, ValueError) as exc:
        fail(exc if isinstance(exc, ToolkeeperError) else str(exc), code=EXIT_BAD_INPUT)
    gateway = build_gateway(registry, handlers)
    try:
        if stdio:
            log.info("serving on stdio")
            run_stdio(gateway.kernel)
            return
        config = HttpConfig(path=path, policy=_policy(host, allow_host, allow_origin),
                            json_response=json_response)

        def ready(running: RunningServer) -> None:
            log.info("toolkeeper gateway listening on %s", running.url)
            click.echo(f"toolkeeper gateway on {running.url}", err=True)

        # uvicorn shuts down gracefully on SIGTERM, then re-raises it: end with status 0.
        signal.signal(signal.SIGTERM, _exit_cleanly)
        try:
            run_foreground(create_asgi_app(gateway.kernel, config), host=host, port=port,
                           path=path, log_level=log_level, on_ready=ready)
        except OSError as exc:
            fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", code=EXIT_BAD_INPUT)
        except KeyboardInterrupt:  # uvicorn re-raises SIGINT after its graceful shutdown
            log.info("stopped")
    finally:
        registry.close()


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def register(group: click.Group) -> None:
    """Add ``serve`` to ``group``."""
    group.add_command(serve)


def main() -> None:
    """``python -m toolkeeper.cli.serve_cmd``: the command on its own."""
    serve(prog_name="toolkeeper serve")


if __name__ == "__main__":
    main()
