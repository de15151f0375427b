"""What ``serve`` prints on standard error once it serves: the first line
``toolkeeper gateway on URL`` (``stdio`` for a stdio server), then one ``toolkeeper KEY:
VALUE`` line each for the registry (its password masked), the estate, the auth mode, the
handler count, the metrics URL when metrics are on and, over HTTP, last, the probe URLs
(``docs/operations.md``).

The lines are for people and for scripts alike: the keys and the first line are stable, and a
line's value never holds a secret.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from toolkeeper.config import GatewayConfig
from toolkeeper.registry import Registry
from toolkeeper.registry.location import default_url
from toolkeeper.registry.masking import shown_url
from toolkeeper.server import ToolHandlers
from toolkeeper.transports.probes import LIVE_PATH, READY_PATH

__all__ = ["banner_lines"]


def _estate(config: GatewayConfig, registry: Registry) -> str:
    estate = config.estate
    sources = [*(["demo"] if estate.demo else []),
               *(f"dir {directory}" for directory in estate.dirs),
               *(f"handlers {reference}" for reference in estate.handlers)]
    names = registry.names()
    versions = sum(len(registry.versions(name)) for name in names)
    return f"{', '.join(sources) or 'registry only'}; tools={len(names)} versions={versions}"


def _auth(config: GatewayConfig, *, stdio: bool) -> str:
    if stdio:
        principal = config.auth.stdio
        return ("stdio principal (anonymous local)" if principal is None
                else f"stdio principal tenant={principal.tenant}")
    return ", ".join(config.auth.methods) or "none (anonymous local principal, loopback only)"


def _beside(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def banner_lines(config: GatewayConfig, registry: Registry, handlers: ToolHandlers, *,
                 url: str | None, metrics_url: str | None = None) -> Sequence[str]:
    """The lines to print, first line first; ``url`` None for a stdio server."""
    registry_url = config.registry.url or default_url()
    lines = [f"toolkeeper gateway on {url or 'stdio'}",
             f"toolkeeper registry: {shown_url(registry_url)}",
             f"toolkeeper estate: {_estate(config, registry)}",
             f"toolkeeper auth: {_auth(config, stdio=url is None)}",
             f"toolkeeper handlers: {len(handlers.bound())}"]
    if metrics_url is not None:
        lines.append(f"toolkeeper metrics: {metrics_url}")
    if url is not None:  # the last line over HTTP
        lines.append(f"toolkeeper probes: {_beside(url, LIVE_PATH)} {_beside(url, READY_PATH)}")
    return lines
