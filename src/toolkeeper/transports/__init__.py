"""Transports: thin adapters between bytes and the protocol kernel.

* :func:`create_asgi_app` - Streamable HTTP as a plain ASGI callable (mountable anywhere);
* :func:`serve_in_thread` / :class:`ServerThread` - uvicorn on an ephemeral loopback port;
* :func:`run_foreground` - uvicorn in the main thread (``toolkeeper serve``);
* :func:`serve_stdio` / :func:`run_stdio` - newline-delimited JSON-RPC on stdin/stdout.
"""

from toolkeeper.transports.asgi_io import ASGIApp
from toolkeeper.transports.http import HttpConfig, StreamableHTTPApp, create_asgi_app
from toolkeeper.transports.runner import (
    RunningServer,
    ServerThread,
    run_foreground,
    serve_in_thread,
)
from toolkeeper.transports.security import (
    DEFAULT_ALLOWED_HOSTS,
    DEFAULT_ALLOWED_ORIGINS,
    OriginPolicy,
)
from toolkeeper.transports.sse import sse_frame
from toolkeeper.transports.stdio import StdioServer, run_stdio, serve_stdio

__all__ = [
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_ALLOWED_ORIGINS",
    "ASGIApp",
    "HttpConfig",
    "OriginPolicy",
    "RunningServer",
    "ServerThread",
    "StdioServer",
    "StreamableHTTPApp",
    "create_asgi_app",
    "run_foreground",
    "run_stdio",
    "serve_in_thread",
    "serve_stdio",
    "sse_frame",
]
