"""The one MCP client (STYLE "The next floors"): era selection, probes, transports, calls.

``connect(target, era=...)`` opens a :class:`Target` (a URL, a stdio command, or an ASGI app in
process), selects the protocol era exactly as SPEC 5.1 writes it, and returns a
:class:`ClientSession` in that era. The kernel's loop, the conformance harness and the
gateway's upstream sources all speak MCP to others through it.
"""

from toolkeeper.client.cache import CachedTool, SharedListings
from toolkeeper.client.connect import ERA_MODES, EraChoice, connect, probe_legacy, probe_modern
from toolkeeper.client.kernel import Kernel, is_relist_refusal
from toolkeeper.client.kernel_outcome import CallOutcome, Incompatibility
from toolkeeper.client.model import Model, ModelTurn, ScriptedModel, render_prompt
from toolkeeper.client.retry import RetryPolicy, side_effect_of
from toolkeeper.client.session import CallReply, ClientSession, ToolListing
from toolkeeper.client.target import Target, TargetKind
from toolkeeper.client.timeouts import ClientTimeouts
from toolkeeper.client.transport import Exchange, Transport
from toolkeeper.errors import (
    ClientAuthenticationError,
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    EraSelectionError,
    ProtocolViolationError,
    RequestRefusedError,
    ServerUnavailableError,
)
from toolkeeper.protocol.era_selection import (
    EraDecision,
    LegacyEvidence,
    ModernObservation,
    ProbeOutcome,
    SelectionMode,
    select_era,
)
from toolkeeper.protocol.versions import Era

__all__ = [
    "ERA_MODES",
    "CachedTool",
    "CallOutcome",
    "CallReply",
    "ClientAuthenticationError",
    "ClientConnectionError",
    "ClientError",
    "ClientSession",
    "ClientTimeoutError",
    "ClientTimeouts",
    "Era",
    "EraChoice",
    "EraDecision",
    "EraSelectionError",
    "Exchange",
    "Incompatibility",
    "Kernel",
    "LegacyEvidence",
    "Model",
    "ModelTurn",
    "ModernObservation",
    "ProbeOutcome",
    "ProtocolViolationError",
    "RequestRefusedError",
    "RetryPolicy",
    "ScriptedModel",
    "SelectionMode",
    "ServerUnavailableError",
    "SharedListings",
    "Target",
    "TargetKind",
    "ToolListing",
    "Transport",
    "connect",
    "is_relist_refusal",
    "probe_legacy",
    "probe_modern",
    "render_prompt",
    "select_era",
    "side_effect_of",
]
