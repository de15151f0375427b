"""The gateway's configuration: one definitions table, the TOML loader that checks a file
against it, and the reference page rendered from it.

``toolkeeper serve --config FILE`` reads the file with :func:`load_config` (flags override
it); ``python -m toolkeeper.config.reference > docs/configuration.md`` writes the page.
"""

from toolkeeper.config.definitions import SECTIONS, SETTINGS, Section, Setting
from toolkeeper.config.loader import check_tree, load_config, parse_config
from toolkeeper.config.model import (
    AuthSettings,
    CallLogSettings,
    EstateSettings,
    GateSettings,
    GatewayConfig,
    JwtIssuerSettings,
    LegacySettings,
    LimitsSettings,
    LoggingSettings,
    MetricsSettings,
    RegistrySettings,
    ReleaseSettings,
    SealingSettings,
    ServerSettings,
    StdioPrincipalSettings,
    TenantLimits,
    ToolLimits,
    TrustedKeySettings,
)

__all__ = [
    "SECTIONS", "SETTINGS", "AuthSettings", "CallLogSettings", "EstateSettings",
    "GateSettings", "GatewayConfig", "JwtIssuerSettings", "LegacySettings", "LimitsSettings",
    "LoggingSettings", "MetricsSettings", "RegistrySettings", "ReleaseSettings",
    "SealingSettings", "Section", "ServerSettings", "Setting", "StdioPrincipalSettings",
    "TenantLimits", "ToolLimits", "TrustedKeySettings", "check_tree", "load_config",
    "parse_config",
]
