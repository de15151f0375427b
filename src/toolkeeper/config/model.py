"""The checked configuration as typed, frozen values: one dataclass per section, field names
the TOML keys (arrays become tuples).

``[limits]`` is the limits feature's own :class:`~toolkeeper.server.limits.LimitsSettings`,
``[calllog]`` and ``[metrics]`` the observability feature's settings, ``[sealing]`` the
gateway's :class:`~toolkeeper.server.sealing.SealingSettings`; ``[auth]`` is defined
here and satisfies the auth feature's read-only protocols
(:mod:`toolkeeper.auth.settings`).
:func:`build_config` turns the loader's checked tree into a :class:`GatewayConfig`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from toolkeeper.contracts.redaction import PERSONAL_KEYS
from toolkeeper.observability.build import CallLogSettings, MetricsSettings
from toolkeeper.server.limits import LimitsSettings, TenantLimits, ToolLimits
from toolkeeper.server.sealing import SealingSettings

__all__ = [
    "AuthSettings", "CallLogSettings", "EstateSettings", "GateSettings", "GatewayConfig",
    "JwtIssuerSettings", "LegacySettings", "LimitsSettings", "LoggingSettings", "MetricsSettings",
    "RegistrySettings", "ReleaseSettings", "SealingSettings", "ServerSettings",
    "StdioPrincipalSettings", "TenantLimits", "ToolLimits", "TrustedKeySettings", "build_config",
]


@dataclass(frozen=True, slots=True)
class RegistrySettings:
    url: str = ""


@dataclass(frozen=True, slots=True)
class ServerSettings:
    transport: str = "http"
    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    json_response: bool = False
    legacy_sessions: str = "stateful"
    head_timeout_s: float = 10.0
    idle_timeout_s: float = 5.0
    body_timeout_s: float = 5.0
    max_body_bytes: int = 4194304
    max_connections: int = 1000
    max_connections_per_ip: int = 0
    backlog: int = 2048
    list_page_size: int = 100
    list_cursor_ttl_s: float = 3600.0
    max_reported_errors: int = 50


@dataclass(frozen=True, slots=True)
class LegacySettings:
    sse_retry_ms: int = 1000
    replay_events: int = 256
    replay_bytes: int = 1048576
    replay_total_bytes: int = 67108864
    resume_window_s: float = 60.0
    ask_timeout_s: float = 300.0
    max_pending_asks: int = 1000
    max_pending_asks_per_session: int = 100
    max_sessions: int = 10_000
    max_session_bytes: int = 16_777_216
    max_sessions_per_credential: int = 1000
    max_session_bytes_per_credential: int = 2_097_152
    max_sessions_per_tenant: int = 2500
    max_session_bytes_per_tenant: int = 4_194_304


@dataclass(frozen=True, slots=True)
class EstateSettings:
    demo: bool = False
    dirs: tuple[str, ...] = ()
    handlers: tuple[str, ...] = ()
    strict: bool = False


@dataclass(frozen=True, slots=True)
class StdioPrincipalSettings:
    tenant: str = "local"
    scopes: tuple[str, ...] = ()
    clearance: str = "restricted"


@dataclass(frozen=True, slots=True)
class JwtIssuerSettings:
    issuer: str
    audience: str = ""
    algorithms: tuple[str, ...] = ("RS256",)
    secret_file: str = ""
    public_key_file: str = ""
    jwks_file: str = ""
    jwks_url: str = ""
    private_key_file: str = ""
    jwks_refresh_s: int = 300
    leeway_s: int = 30
    tenant_claim: str = "tenant"
    scopes_claim: str = "scope"
    clearance_claim: str = "clearance"
    max_token_lifetime_s: int | None = None
    tenants: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """``[auth]``; ``stdio`` is None when ``[auth.stdio]`` is absent, ``jwt_issuers`` holds
    ``[[auth.jwt.issuers]]`` in file order."""

    methods: tuple[str, ...] = ()
    resource: str = ""
    authorization_servers: tuple[str, ...] = ()
    scopes_supported: tuple[str, ...] = ()
    stdio: StdioPrincipalSettings | None = None
    jwt_issuers: tuple[JwtIssuerSettings, ...] = ()
    jwt_max_token_lifetime_s: int = 86_400


@dataclass(frozen=True, slots=True)
class LoggingSettings:
    level: str = "info"
    format: str = "text"
    otel: bool = False
    access: str = "errors"
    personal_data: str = "keep"
    personal_keys: tuple[str, ...] = PERSONAL_KEYS


@dataclass(frozen=True, slots=True)
class TrustedKeySettings:
    id: str
    file: str
    algorithm: str = ""


@dataclass(frozen=True, slots=True)
class GateSettings:
    """``[gate]``: satisfies :class:`toolkeeper.gate.keys.GateSettingsLike`."""

    signing_key_id: str = ""
    signing_key_file: str = ""
    trusted_keys: tuple[TrustedKeySettings, ...] = ()


@dataclass(frozen=True, slots=True)
class ReleaseSettings:
    """``[release]``: how often the gateway looks at its rollouts (0: never)."""

    evaluate_every_s: float = 5.0


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """Everything ``toolkeeper serve`` is configured with (file, then flags over it)."""

    registry: RegistrySettings = field(default_factory=RegistrySettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    legacy: LegacySettings = field(default_factory=LegacySettings)
    estate: EstateSettings = field(default_factory=EstateSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    sealing: SealingSettings = field(default_factory=SealingSettings)
    limits: LimitsSettings = field(default_factory=LimitsSettings)
    calllog: CallLogSettings = field(default_factory=CallLogSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    gate: GateSettings = field(default_factory=GateSettings)
    release: ReleaseSettings = field(default_factory=ReleaseSettings)
    upstreams: tuple[Mapping[str, Any], ...] = ()
    """Each ``[[upstreams]]`` table in the stored form of
    :meth:`toolkeeper.upstreams.UpstreamDefinition.from_mapping` (unset keys left out)."""


_T = TypeVar("_T")


def _leaves(cls: type[_T], values: Mapping[str, Any], **nested: Any) -> _T:
    """``cls`` from the checked ``values`` of its section (leaf keys only) and ``nested``."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]  # cls is a dataclass
    plain = {name: value for name, value in values.items()
             if name in names and name not in nested and not isinstance(value, dict | list)}
    return cls(**plain, **nested)


def build_config(tree: Mapping[str, Any]) -> GatewayConfig:
    """The typed configuration of a checked tree (every section present, defaults filled)."""
    auth, limits = tree["auth"], tree["limits"]
    stdio = auth["stdio"]
    return GatewayConfig(
        registry=_leaves(RegistrySettings, tree["registry"]),
        server=_leaves(ServerSettings, tree["server"]),
        legacy=_leaves(LegacySettings, tree["legacy"]),
        estate=_leaves(EstateSettings, tree["estate"]),
        auth=_leaves(
            AuthSettings, auth,
            stdio=None if stdio is None else _leaves(StdioPrincipalSettings, stdio),
            jwt_issuers=tuple(_leaves(JwtIssuerSettings, issuer)
                              for issuer in auth["jwt"]["issuers"]),
            jwt_max_token_lifetime_s=auth["jwt"]["max_token_lifetime_s"]),
        sealing=_leaves(SealingSettings, tree["sealing"]),
        limits=_leaves(
            LimitsSettings, limits,
            tenants={name: _leaves(TenantLimits, values)
                     for name, values in limits["tenants"].items()},
            tools={name: _leaves(ToolLimits, values)
                   for name, values in limits["tools"].items()}),
        calllog=_leaves(CallLogSettings, tree["calllog"]),
        metrics=_leaves(MetricsSettings, tree["metrics"]),
        logging=_leaves(LoggingSettings, tree["logging"]),
        gate=_leaves(GateSettings, tree["gate"], trusted_keys=tuple(
            _leaves(TrustedKeySettings, key) for key in tree["gate"]["trusted_keys"])),
        release=_leaves(ReleaseSettings, tree["release"]),
        upstreams=tuple(_upstream(values) for values in tree["upstreams"]),
    )


def _upstream(values: Mapping[str, Any]) -> dict[str, Any]:
    """One checked ``[[upstreams]]`` table as a definition mapping: an empty ``url``,
    ``command``, ``token_file`` or ``header_file`` is unset, and so is a per-tool key left
    unset."""
    out = {key: list(value) if isinstance(value, tuple) else value
           for key, value in values.items()
           if key not in ("drift", "tools") and value not in ("", ())}
    out["drift"] = dict(values["drift"])
    out["tools"] = {tool: {key: list(value) if isinstance(value, tuple) else value
                           for key, value in keys.items() if value is not None}
                    for tool, keys in values["tools"].items()}
    return out
