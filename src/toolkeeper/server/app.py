"""One call from a registry and handlers to a servable ASGI app."""

from __future__ import annotations

from typing import Any

from toolkeeper.registry import Registry
from toolkeeper.server.gateway import Gateway, build_gateway
from toolkeeper.server.handlers import ToolHandlers
from toolkeeper.transports.http import HttpConfig, StreamableHTTPApp, create_asgi_app

__all__ = ["build_app"]


def build_app(registry: Registry, handlers: ToolHandlers | None = None, *,
              http: HttpConfig | None = None, **gateway_options: Any
              ) -> tuple[StreamableHTTPApp, Gateway]:
    """The Streamable HTTP app for a gateway over ``registry`` (options as
    :func:`build_gateway`), and the gateway itself (its call log, views, kernel, change hub).
    Legacy sessions get their standalone GET stream; shutdown ends every open stream."""
    gateway = build_gateway(registry, handlers, **gateway_options)
    return create_asgi_app(gateway.kernel, http, changes=gateway.changes), gateway
