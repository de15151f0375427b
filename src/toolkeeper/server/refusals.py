"""What the refusal log records of a refused ``tools/call`` (:class:`RefusalRecord`).

Built on the refusal path only: the call's answer is decided before this runs and never
depends on it. Where the wire keeps one shape for two causes, the record names the cause: a
tool that does not exist and one the caller may not see are both ``Unknown tool`` to the
caller (no existence oracle, :mod:`~toolkeeper.server.gate`), but ``unknown_tool`` and
``unentitled_tool`` here; likewise a pin to a version that exists but is not the caller's is
``schema_version_unknown`` on the wire and ``unentitled_version`` here.

Reason codes (docs/refusal-log.md):

=========================  =================================================================
``invalid_arguments``      the arguments failed the contract's input schema
``invalid_params``         the params are not a call (a name that is not a string, ...)
``unknown_tool``           no version of the tool is in the registry
``unentitled_tool``        the tool exists, but no live version of it is the caller's
``retired_tool``           every version of the tool is retired
``unavailable_tool``       the caller may see it, but nothing in this process can run it
``schema_version_*``       the gate's reason (retired, unknown, unavailable, conflict)
``unentitled_version``     the pinned version exists, but is not the caller's
``capability_required``    the handler needs a client capability the client lacks
``invalid_request_state``  a ``requestState`` that is not valid (or spent already)
``release.halted``         the tool's rollout is halted (calls refused until an operator acts)
``rate_limited``           the principal's rate limit
``concurrency_limited``    the principal's concurrency limit
``auth.<reason>``          the credential was refused (:data:`toolkeeper.auth.REASONS`)
=========================  =================================================================
"""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status
from toolkeeper.errors import JsonRpcError, SemverError
from toolkeeper.protocol import Call, Era
from toolkeeper.registry import Principal, Registry, is_visible
from toolkeeper.server.call_outcomes import refusal_reason
from toolkeeper.server.calllog import RefusalRecord, arguments_digest, asked_text
from toolkeeper.server.gate import FASTMCP_META_KEY, SCHEMA_VERSION_KEY, UNKNOWN

__all__ = ["auth_refusal", "call_refusal", "gate_refusal", "limit_refusal", "recorded_reason"]

_LIMIT_REASONS = {"rate": "rate_limited", "concurrency": "concurrency_limited"}


def _asked_version(params: Any) -> str | None:
    """The version the call pinned, as sent (``_meta.schemaVersion``, else FastMCP's)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    value = meta.get(SCHEMA_VERSION_KEY)
    if value is None:
        fastmcp = meta.get(FASTMCP_META_KEY)
        value = fastmcp.get("version") if isinstance(fastmcp, dict) else None
    return asked_text(value)


def call_refusal(call: Call, reason: str, version: str | None = None,
                 rollout_step: int | None = None) -> RefusalRecord:
    """The record of ``call`` refused for ``reason``: the tool and version as asked (or
    ``version``, the one the gate resolved, whose schema refused the arguments), the
    principal, the era, the request id, the digest of the arguments (when an object) and the
    step of the tool's rollout the call was judged under."""
    params = call.params
    principal = call.principal
    arguments = params.get("arguments")
    return RefusalRecord(
        reason, asked_text(params.get("name")),
        _asked_version(params) if version is None else version,
        getattr(principal, "tenant", None), getattr(principal, "credential", None),
        "modern" if call.era is Era.MODERN else call.era.value, call.request_id,
        arguments_digest(arguments) if isinstance(arguments, dict) else None, rollout_step)


def auth_refusal(reason: str, credential: str | None, era: str | None) -> RefusalRecord:
    """The record of a refused credential: ``auth.<reason>``, no tenant (none was
    established), the credential id when it was identified, no tool (the body is not read)."""
    return RefusalRecord(f"auth.{reason}", credential=credential, era=era)


def limit_refusal(call: Call, exc: JsonRpcError) -> RefusalRecord:
    """The record of a call a limit refused: ``rate_limited`` or ``concurrency_limited``,
    from the RATE_LIMITED error's ``limit``."""
    data = exc.rpc_data if isinstance(exc.rpc_data, dict) else {}
    return call_refusal(call, _LIMIT_REASONS.get(str(data.get("limit")), "rate_limited"))


def gate_refusal(registry: Registry, call: Call, exc: JsonRpcError,
                 rollout_step: int | None = None) -> RefusalRecord:
    """The record of a call its params check or the gate refused, with
    :func:`recorded_reason` (and the step of the rollout of the tool it named)."""
    principal = call.principal
    reason = (recorded_reason(registry, principal, exc, call.params)
              if isinstance(principal, Principal) else refusal_reason(exc))
    return call_refusal(call, reason, None, rollout_step)


def recorded_reason(registry: Registry, principal: Principal, exc: JsonRpcError,
                    params: Any) -> str:
    """The reason a gate or params refusal is recorded with: :func:`refusal_reason`, with an
    unknown tool or version told apart from an unentitled one (read from the registry here,
    after the refusal was decided)."""
    reason = refusal_reason(exc)
    name = params.get("name")
    if type(name) is not str or reason not in ("unknown_tool", UNKNOWN):
        return reason
    if reason == UNKNOWN:
        data = exc.rpc_data if isinstance(exc.rpc_data, dict) else {}
        try:
            pinned = registry.get(name, Version.parse(str(data.get("requestedVersion"))))
        except SemverError:
            return reason
        return reason if pinned is None else "unentitled_version"
    live = [spec for spec in registry.versions(name) if spec.status is not Status.RETIRED]
    if not live:
        return "retired_tool" if registry.versions(name) else "unknown_tool"
    if not any(is_visible(spec, principal, include_deprecated=True) for spec in live):
        return "unentitled_tool"
    return "unavailable_tool"
