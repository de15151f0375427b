"""The features ``serve`` assembles from its configuration, beside the gateway itself: who a
request is (``[auth]``), the limits (``[limits]``), the sealer (``[sealing]``), and the call
log, metrics and spans (``[calllog]``, ``[metrics]``, ``logging.otel``), and the health probes
(:class:`~toolkeeper.server.health.Health`, on the HTTP and the metrics listener).

Each feature is built by its own module's build function from the loader's values:
:func:`toolkeeper.auth.build_resolver` / :func:`~toolkeeper.auth.stdio_principal`,
:func:`toolkeeper.server.limits.build_limits`, :func:`toolkeeper.server.sealing.build_sealer`,
:func:`toolkeeper.observability.build_observability`. A feature that is off costs nothing per
call (its build returns None, or the observability's pass-through).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from toolkeeper.auth import build_resolver, default_resource, metadata_documents, stdio_principal
from toolkeeper.config import GatewayConfig
from toolkeeper.observability import Observability, build_observability
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Registry
from toolkeeper.server.health import Health
from toolkeeper.server.limits import CallLimits, build_limits
from toolkeeper.server.principal import PrincipalResolver
from toolkeeper.server.sealing import build_sealer

__all__ = ["ServeFeatures", "build_features"]


@dataclass(slots=True)
class ServeFeatures:
    """What ``build_gateway`` and the HTTP app take besides the registry and handlers;
    :meth:`stop` (after the server stops, before the registry closes) ends the observability
    threads and writes the last call-log rows."""

    resolver: PrincipalResolver | None
    limits: CallLimits | None
    observability: Observability
    sealer: Sealer
    health: Health
    documents: Mapping[str, bytes] = field(default_factory=dict)

    def stop(self) -> None:
        self.observability.stop()


def _principals(config: GatewayConfig, registry: Registry, *, stdio: bool
                ) -> tuple[PrincipalResolver | None, Mapping[str, bytes]]:
    auth, server = config.auth, config.server
    if stdio:
        return stdio_principal(auth, registry), {}
    if not auth.methods:  # the anonymous local principal (the loader allowed it: loopback)
        return None, {}
    resource = auth.resource or default_resource(server.host, server.port, server.path)
    return (build_resolver(auth, registry, resource=resource),
            metadata_documents(auth, resource, server.path))


def build_features(config: GatewayConfig, registry: Registry, *, stdio: bool
                   ) -> ServeFeatures:
    """Every feature of ``config`` over ``registry``; a refusal is a ConfigError (or a
    StoreError for an unusable call-log store) naming its key."""
    resolver, documents = _principals(config, registry, stdio=stdio)
    limits = build_limits(config.limits)
    sealer = build_sealer(config.sealing, os.environ)
    health = Health(registry)
    observability = build_observability(config.calllog, config.metrics, registry=registry,
                                        registry_url=config.registry.url or None,
                                        otel=config.logging.otel,
                                        probes=None if stdio else health.answer)
    return ServeFeatures(resolver, limits, observability, sealer, health, documents)
