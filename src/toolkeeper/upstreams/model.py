"""An upstream MCP server put under contract: what an operator declares about it.

An :class:`UpstreamDefinition` is the whole declaration of one upstream (``toolkeeper upstream
add`` or a ``[[upstreams]]`` table of the configuration file): where it runs (a Streamable HTTP
URL or a stdio command), the prefix of its exposed names, the contract metadata its tools get
(classification, side effect, tenants, scopes, with per-tool overrides), the file that holds the
credential it receives, the era selection, the sync interval and the drift policy. It is stored
in the registry (so every replica serves the same upstreams) as :meth:`to_mapping`'s canonical
form and read back with :meth:`from_mapping`; a malformed mapping is
:class:`~toolkeeper.errors.ConfigError` ``upstream.invalid`` with the path of the first problem.

The exposed name of an upstream tool is a pure function of the definition and the tool:
:meth:`UpstreamDefinition.exposed_name` (``prefix + name``). An :class:`UpstreamBinding` ties an
exposed contract version to the upstream tool that runs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolkeeper.contracts.spec import DataClassification, SideEffect
from toolkeeper.errors import ConfigError

__all__ = [
    "DRIFT_CLASSES",
    "DriftAction",
    "DriftPolicy",
    "ToolOverride",
    "UpstreamBinding",
    "UpstreamDefinition",
]

DriftAction = Literal["publish", "quarantine"]
_ACTIONS = ("publish", "quarantine")
_ERAS = ("auto", "modern", "legacy")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

DRIFT_CLASSES = ("major", "minor", "patch", "descriptive")
"""The drift classes a policy decides: the classifier's level of a schema change (``major``,
``minor``, ``patch``) and ``descriptive`` (description, title or annotations changed). A change
of annotations that lowers the declared risk is quarantined whatever the policy says."""


@dataclass(frozen=True, slots=True)
class DriftPolicy:
    """What a sync does with each class of drift (``[upstreams.NAME.drift]``)."""

    major: DriftAction = "quarantine"
    minor: DriftAction = "publish"
    patch: DriftAction = "publish"
    descriptive: DriftAction = "quarantine"

    def action(self, drift_class: str) -> DriftAction:
        value: DriftAction = getattr(self, drift_class)
        return value

    def to_mapping(self) -> dict[str, str]:
        return {name: self.action(name) for name in DRIFT_CLASSES}


@dataclass(frozen=True, slots=True)
class ToolOverride:
    """Contract metadata for one upstream tool, over the upstream's defaults (None: keep)."""

    classification: DataClassification | None = None
    side_effect: SideEffect | None = None
    tenants: tuple[str, ...] | None = None
    scopes: tuple[str, ...] | None = None

    def to_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.classification is not None:
            out["classification"] = self.classification.value
        if self.side_effect is not None:
            out["side_effect"] = self.side_effect.value
        if self.tenants is not None:
            out["tenants"] = list(self.tenants)
        if self.scopes is not None:
            out["scopes"] = list(self.scopes)
        return out


@dataclass(frozen=True, slots=True)
class UpstreamDefinition:
    """One upstream MCP server (exactly one of ``url`` and ``command`` is set)."""

    name: str
    url: str | None = None
    command: tuple[str, ...] | None = None
    prefix: str = ""
    classification: DataClassification = DataClassification.INTERNAL
    side_effect: SideEffect = SideEffect.WRITE
    tenants: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    token_file: str | None = None
    """A file whose content (stripped) is sent as ``Authorization: Bearer`` to this upstream.
    The caller's own token never reaches an upstream."""
    header_file: str | None = None
    """A file of ``Name: value`` lines sent as headers to this upstream."""
    era: str = "auto"
    sync_interval_s: float = 0.0
    """Seconds between periodic syncs (0: at start, on ``list_changed`` and on demand only)."""
    call_timeout_s: float = 30.0
    drift: DriftPolicy = field(default_factory=DriftPolicy)
    tools: Mapping[str, ToolOverride] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem is not None:
            raise ConfigError(f"upstream {self.name!r}: {problem[1]}", code="upstream.invalid",
                              data={"key": problem[0]})

    @property
    def transport(self) -> str:
        return "http" if self.url is not None else "stdio"

    def exposed_name(self, tool: str) -> str:
        """The name the gateway serves the upstream tool ``tool`` under."""
        return self.prefix + tool

    def override(self, tool: str) -> ToolOverride:
        return self.tools.get(tool, ToolOverride())

    def to_mapping(self) -> dict[str, Any]:
        """The canonical stored form (keys are the configuration file's)."""
        out: dict[str, Any] = {"name": self.name}
        if self.url is not None:
            out["url"] = self.url
        if self.command is not None:
            out["command"] = list(self.command)
        out.update({
            "prefix": self.prefix, "classification": self.classification.value,
            "side_effect": self.side_effect.value, "tenants": sorted(self.tenants),
            "scopes": sorted(self.scopes), "era": self.era,
            "sync_interval_s": self.sync_interval_s, "call_timeout_s": self.call_timeout_s,
            "drift": self.drift.to_mapping(),
            "tools": {name: self.tools[name].to_mapping() for name in sorted(self.tools)},
        })
        if self.token_file is not None:
            out["token_file"] = self.token_file
        if self.header_file is not None:
            out["header_file"] = self.header_file
        return out

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> UpstreamDefinition:
        """Read :meth:`to_mapping`'s form (or a configuration table); unknown keys refused."""
        name = data.get("name")
        where = f"upstream {name!r}" if isinstance(name, str) else "upstream"
        known = {"name", "url", "command", "prefix", "classification", "side_effect", "tenants",
                 "scopes", "token_file", "header_file", "era", "sync_interval_s",
                 "call_timeout_s", "drift", "tools"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r}", code="upstream.invalid",
                              data={"key": unknown[0]})
        try:
            command = data.get("command")
            return cls(
                name=_typed(data, "name", str),
                url=data.get("url"),
                command=tuple(command) if isinstance(command, (list, tuple)) else command,
                prefix=data.get("prefix", ""),
                classification=DataClassification(data.get("classification", "internal")),
                side_effect=SideEffect(data.get("side_effect", "write")),
                tenants=tuple(data.get("tenants", ())),
                scopes=tuple(data.get("scopes", ())),
                token_file=data.get("token_file"),
                header_file=data.get("header_file"),
                era=data.get("era", "auto"),
                sync_interval_s=float(data.get("sync_interval_s", 0.0)),
                call_timeout_s=float(data.get("call_timeout_s", 30.0)),
                drift=_policy(data.get("drift", {})),
                tools={str(tool): _override(tool, value)
                       for tool, value in dict(data.get("tools", {})).items()},
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {exc}", code="upstream.invalid") from None


@dataclass(frozen=True, slots=True)
class UpstreamBinding:
    """An exposed contract version and the upstream tool that runs it."""

    upstream: str
    tool: str
    exposed: str
    version: str
    digest: str
    """The descriptor digest of the contract in force for this version."""


def _typed(data: Mapping[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise TypeError(f"{key} must be a {kind.__name__}")
    return value


def _policy(value: Any) -> DriftPolicy:
    if not isinstance(value, Mapping):
        raise TypeError("drift must be a table")
    unknown = sorted(set(value) - set(DRIFT_CLASSES))
    if unknown:
        raise ValueError(f"drift: unknown class {unknown[0]!r} (one of {', '.join(DRIFT_CLASSES)})")
    for key, action in value.items():
        if action not in _ACTIONS:
            raise ValueError(f"drift.{key} must be 'publish' or 'quarantine'")
    return DriftPolicy(**dict(value))


def _override(tool: str, value: Any) -> ToolOverride:
    if not isinstance(value, Mapping):
        raise TypeError(f"tools.{tool} must be a table")
    unknown = sorted(set(value) - {"classification", "side_effect", "tenants", "scopes"})
    if unknown:
        raise ValueError(f"tools.{tool}: unknown key {unknown[0]!r}")
    classification = value.get("classification")
    side_effect = value.get("side_effect")
    tenants = value.get("tenants")
    scopes = value.get("scopes")
    return ToolOverride(
        DataClassification(classification) if classification is not None else None,
        SideEffect(side_effect) if side_effect is not None else None,
        tuple(tenants) if tenants is not None else None,
        tuple(scopes) if scopes is not None else None)


def _problem(defn: UpstreamDefinition) -> tuple[str, str] | None:
    if not isinstance(defn.name, str) or not _NAME.match(defn.name):
        return ("name", "the name must be 1-64 letters, digits, '_', '.' or '-'")
    if (defn.url is None) == (defn.command is None):
        return ("url", "exactly one of url and command must be set")
    if defn.url is not None and not (isinstance(defn.url, str)
                                     and defn.url.startswith(("http://", "https://"))):
        return ("url", "the url must be an http:// or https:// URL")
    if defn.command is not None and (not defn.command or not all(
            isinstance(part, str) and part for part in defn.command)):
        return ("command", "the command must be a non-empty list of non-empty strings")
    if not isinstance(defn.prefix, str):
        return ("prefix", "the prefix must be a string")
    if defn.era not in _ERAS:
        return ("era", f"era must be one of {', '.join(_ERAS)}")
    if defn.sync_interval_s < 0:
        return ("sync_interval_s", "sync_interval_s must be 0 or more")
    if defn.call_timeout_s <= 0:
        return ("call_timeout_s", "call_timeout_s must be more than 0")
    if defn.token_file is not None and defn.header_file is not None:
        return ("token_file", "set token_file or header_file, not both")
    return None
