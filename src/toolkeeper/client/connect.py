"""``connect``: open a transport, select the era by SPEC 5.1, hand back a session.

The probes run here; the judgment is :func:`toolkeeper.protocol.era_selection.select_era`'s,
asked again after each probe until it selects an era or refuses. The ``era`` argument maps to
the selection policy:

* ``"modern"`` -> strict: one bounded ``server/discover``; the session is modern only if it
  proves the peer modern (a discover result listing 2026-07-28, or a recognised modern error);
* ``"auto"`` -> fallback: the same probe; an inconclusive one (timeout, empty answer, closed
  connection, unrecognised answer) permits one bounded legacy ``initialize`` only when
  ``legacy_allowed`` (the endpoint is explicitly configured: on the caller's allow-list, or
  named on the command line, where the CLI passes it unless ``--strict``; the library's
  default stays strict);
* ``"legacy"`` -> legacy only: no modern probe; naming the legacy era allow-lists the endpoint;
  the session is legacy once ``initialize`` validates with a negotiated legacy revision.

A recognised modern error selects the modern era (it is never a reason to fall back): the
session is returned, and the same error answers its requests until the cause is fixed.

When no era is selected: a target silent to every probe sent raises
:class:`~toolkeeper.errors.ClientTimeoutError` (``client.timeout``, the decision in its data);
any other refusal raises :class:`~toolkeeper.errors.EraSelectionError` whose message and
``data.remedy`` name what would change it (the argument, and the command-line flag).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from toolkeeper.client.session import ClientSession
from toolkeeper.client.target import Target
from toolkeeper.client.timeouts import ClientTimeouts
from toolkeeper.client.transport import REFUSED, Exchange, Transport, find_response
from toolkeeper.errors import (
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    EraSelectionError,
    ProtocolViolationError,
)
from toolkeeper.protocol.client_requests import (
    initialize_params,
    legacy_notification,
    legacy_request,
    modern_request,
)
from toolkeeper.protocol.era_selection import (
    EraDecision,
    LegacyEvidence,
    ModernObservation,
    Next,
    ProbeOutcome,
    SelectionMode,
    select_era,
)
from toolkeeper.protocol.responses import (
    check_session_id,
    is_recognised_modern_error,
    validate_response,
)
from toolkeeper.protocol.versions import MODERN_VERSIONS, Era

__all__ = ["ERA_MODES", "EraChoice", "connect", "probe_legacy", "probe_modern"]

EraChoice = Literal["auto", "modern", "legacy"]
ERA_MODES: Final[Mapping[str, SelectionMode]] = MappingProxyType({
    "auto": SelectionMode.FALLBACK, "modern": SelectionMode.STRICT,
    "legacy": SelectionMode.LEGACY})

_DISCOVER_ID: Final = 1
_INITIALIZE_ID: Final = 2
_FIRST_SESSION_ID: Final = 3
"""Probe ids differ, so a late answer to a timed-out probe never answers the next request."""

_FAILURE_OUTCOMES: Final = (
    (ClientTimeoutError, ProbeOutcome.TIMEOUT),
    (ClientConnectionError, ProbeOutcome.CLOSED),
    (ProtocolViolationError, ProbeOutcome.UNRECOGNISED),
)


async def _bounded(transport: Transport, request: tuple[dict[str, Any], dict[str, str]],
                   auth: Mapping[str, str], timeouts: ClientTimeouts) -> Exchange:
    message, headers = request
    return await transport.exchange(message, {**headers, **auth}, timeout=timeouts.probe_s,
                                    max_bytes=timeouts.probe_max_bytes)


async def probe_modern(transport: Transport, auth: Mapping[str, str], timeouts: ClientTimeouts
                       ) -> tuple[ModernObservation, dict[str, Any]]:
    """One bounded ``server/discover``: the observation, and the discover result if valid."""
    request = modern_request(_DISCOVER_ID, "server/discover", {})
    try:
        exchange = await _bounded(transport, request, auth, timeouts)
    except ClientError as exc:
        for kind, outcome in _FAILURE_OUTCOMES:
            if isinstance(exc, kind) and exc.code != REFUSED:
                return ModernObservation(outcome, detail=exc.code), {}
        raise
    response = find_response(exchange, _DISCOVER_ID)
    status = exchange.status
    if response is None:
        empty = not exchange.messages and exchange.body_bytes == 0
        return ModernObservation(ProbeOutcome.EMPTY if empty else ProbeOutcome.UNRECOGNISED,
                                 status, detail="no JSON-RPC response"), {}
    problems = validate_response(response, _DISCOVER_ID, Era.MODERN, "server/discover")
    if problems:
        return ModernObservation(ProbeOutcome.UNRECOGNISED, status, detail=problems[0]), {}
    if "error" in response:
        error = response["error"]
        outcome = (ProbeOutcome.MODERN_ERROR if is_recognised_modern_error(error)
                   else ProbeOutcome.UNRECOGNISED)
        data = error.get("data")
        named = data.get("supported") if isinstance(data, dict) else None
        versions = tuple(v for v in named if isinstance(v, str)) \
            if isinstance(named, list) else ()
        return ModernObservation(outcome, status, error["code"], versions,
                                 detail=f"error {error['code']}"), {}
    result = response["result"]
    versions = tuple(result["supportedVersions"])
    mutual = any(v in MODERN_VERSIONS for v in versions)
    outcome = ProbeOutcome.DISCOVERED if mutual else ProbeOutcome.NO_MUTUAL_VERSION
    return ModernObservation(outcome, status, None, versions), result


async def probe_legacy(transport: Transport, auth: Mapping[str, str], timeouts: ClientTimeouts,
                       capabilities: Mapping[str, Any] | None = None
                       ) -> tuple[LegacyEvidence, dict[str, Any], str | None]:
    """One bounded ``initialize`` (offering ``capabilities``): the evidence, the result, and
    the session id minted."""
    request = legacy_request(_INITIALIZE_ID, "initialize",
                             initialize_params(capabilities=capabilities))
    try:
        exchange = await _bounded(transport, request, auth, timeouts)
    except (ClientTimeoutError, ClientConnectionError, ProtocolViolationError) as exc:
        if exc.code == REFUSED:
            raise
        return LegacyEvidence(None, (f"$: {exc.code}",), failure=exc.code), {}, None
    response = find_response(exchange, _INITIALIZE_ID)
    if response is None:
        return LegacyEvidence(None, ("$: no JSON-RPC response",), exchange.status), {}, None
    problems = validate_response(response, _INITIALIZE_ID, Era.LEGACY, "initialize")
    refused_with: int | None = None
    if not problems and "error" in response:
        refused_with = response["error"]["code"]
        problems = [f"$.error: initialize refused with code {refused_with}"]
    session_id = exchange.headers.get("mcp-session-id")
    problems += check_session_id(session_id)
    result = response.get("result")
    result = result if isinstance(result, dict) else {}
    version = result.get("protocolVersion")
    evidence = LegacyEvidence(version if isinstance(version, str) else None, tuple(problems),
                              exchange.status, error_code=refused_with)
    return evidence, result, session_id


async def _select(transport: Transport, mode: SelectionMode, allowed: bool,
                  auth: Mapping[str, str], timeouts: ClientTimeouts,
                  capabilities: Mapping[str, Any] | None = None
                  ) -> tuple[EraDecision, dict[str, Any], str | None]:
    observation: ModernObservation | None = None
    evidence: LegacyEvidence | None = None
    server: dict[str, Any] = {}
    session_id: str | None = None
    decision = select_era(None, mode, allowed)
    for _ in range(len(Next)):
        if decision.next is Next.MODERN_PROBE:
            observation, server = await probe_modern(transport, auth, timeouts)
        elif decision.next is Next.LEGACY_PROBE:
            evidence, server, session_id = await probe_legacy(transport, auth, timeouts,
                                                              capabilities)
        else:
            break
        decision = select_era(observation, mode, allowed, evidence)
    return decision, server, session_id


_REMEDIES: Final[Mapping[str, str]] = MappingProxyType({
    "refused.legacy_not_allowed":
        "the endpoint may get the bounded legacy probe when the caller allows it "
        "(legacy_allowed=True; the command line allows it unless --strict)",
    "refused.strict_unproven":
        "strict mode needs proof of the modern era; era='auto' with legacy_allowed=True "
        "allows the bounded legacy probe (the command line: without --strict or --era modern)",
    "refused.no_mutual_version":
        "the peer is modern but lists no version this client speaks; era='legacy' "
        "(--era legacy) tries the legacy handshake",
    "era.legacy_refused":
        "the peer refused the legacy handshake with a modern error; era='auto' or "
        "era='modern' (--era auto or --era modern) selects the modern era",
})
"""Verdict -> what the caller could change to get an era (the library argument and the
command-line flag): in the refusal's message and its ``data.remedy``."""


def _refusal(decision: EraDecision, bounds: ClientTimeouts) -> ClientError:
    """The error of a decision that selected no era: ``client.timeout`` when every probe
    timed out (nothing answered; not an era verdict), else an EraSelectionError naming what
    would change it."""
    data: dict[str, Any] = {"decision": decision.to_json()}
    if decision.verdict == "unreachable.timeout":
        return ClientTimeoutError(f"the target answered no probe within {bounds.probe_s}s",
                                  data={**data, "timeoutS": bounds.probe_s})
    seen = decision.observation
    detail = "" if seen is None else f"; modern probe: {seen.outcome.value}"
    remedy = _REMEDIES.get(decision.verdict)
    if remedy is not None:
        data["remedy"] = remedy
    tail = "" if remedy is None else f": {remedy}"
    return EraSelectionError(f"no protocol era selected ({decision.verdict}{detail}){tail}",
                             data=data)


def _bearer(token: str | None) -> dict[str, str]:
    """The Authorization header of ``token``: visible ASCII only (RFC 6750's b64token is a
    subset), else ``client.bad_token`` before anything is sent, the token never quoted."""
    if not token:
        return {}
    if not all("\x21" <= c <= "\x7e" for c in token):
        raise ClientError("the token cannot go in an Authorization header (visible ASCII only, "
                          "no spaces or control characters)", code="client.bad_token")
    return {"Authorization": f"Bearer {token}"}


async def connect(target: Target, *, era: EraChoice = "auto", token: str | None = None,
                  legacy_allowed: bool = False, timeouts: ClientTimeouts | None = None,
                  capabilities: Mapping[str, Any] | None = None) -> ClientSession:
    """A session with ``target`` in the era SPEC 5.1 selects under ``era``'s policy; an
    :class:`~toolkeeper.errors.EraSelectionError` (with the decision) when none is.
    ``capabilities``: what a legacy session declares in ``initialize`` (say
    ``{"elicitation": {}}`` for a client that answers the server's requests through
    ``call_tool(on_request=...)``); none by default."""
    mode = ERA_MODES.get(era)
    if mode is None:
        raise ClientError(f"unknown era choice {era!r}", code="client.bad_era",
                          data={"choices": sorted(ERA_MODES)})
    bounds = timeouts or ClientTimeouts()
    allowed = legacy_allowed or mode is SelectionMode.LEGACY
    auth = _bearer(token)
    transport = await target.open(bounds)
    try:
        decision, server, session_id = await _select(transport, mode, allowed, auth, bounds,
                                                     capabilities)
        if decision.era is None:
            raise _refusal(decision, bounds)
        if decision.era is Era.LEGACY:
            message, headers = legacy_notification("notifications/initialized",
                                                   version=decision.version,
                                                   session_id=session_id)
            await transport.notify(message, {**headers, **auth}, timeout=bounds.probe_s)
    except BaseException:
        await transport.aclose()
        raise
    return ClientSession(transport, decision, token=token, timeouts=bounds,
                         session_id=session_id, server=server, first_id=_FIRST_SESSION_ID,
                         capabilities=capabilities)
