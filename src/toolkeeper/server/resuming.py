"""The modern era's ``input_required`` round trip for ``tools/call`` and ``prompts/get``
(SEP-2322, mcp-wire 7.3).

A round that ends with unanswered asks (:class:`~toolkeeper.server.asking.InputRequired`) is
answered with::

    {"resultType": "input_required", "inputRequests": {key: {"method", "params"}},
     "requestState": "<sealed token>", "_meta": {...}}

The ``requestState`` is sealed with the gateway's :class:`~toolkeeper.protocol.sealing.Sealer`
(AES-256-GCM; purpose ``tools/call``) and carries the answers the handler has used so far. It
is bound to the tool, the contract version, the digest of the call's redacted arguments
(:func:`~toolkeeper.server.calllog.arguments_digest`), the principal (tenant and credential)
and an expiry (:data:`DEFAULT_TTL_S` unless configured). The client's retry (a new request
with the same ``name`` and ``arguments`` plus ``inputResponses`` and the ``requestState``
echoed) passes the gate, capability and argument checks like any call; then the state is
opened, and the handler is re-run with the sealed answers and the retry's ``inputResponses``.

A ``prompts/get`` round is the same with purpose ``prompts/get``, its state bound to the prompt
name instead of the tool and version (prompts have no versions), the arguments' digest, the
principal and an expiry; it is refused the same way, before the prompt handler runs.

A requestState that cannot be used is refused before the handler runs, with ``-32602`` and
``data: {"reason": "invalid_request_state", "sealReason": <why>, "path":
"$.params.requestState"}`` (``reason`` as the MCP SDK answers; ``sealReason`` is
:mod:`toolkeeper.protocol.sealing`'s stable reason):

=======================  ============================================================
``sealReason``           the state ...
=======================  ============================================================
``malformed``            is not a token of this gateway's format
``unsealable``           fails authentication: tampered, truncated, or another key
``purpose_mismatch``     was issued for another method (a prompt's for a tool call)
``prompt_mismatch``      was issued for another prompt
``tool_mismatch``        was issued for another tool
``version_mismatch``     was issued under another contract version of the tool
``arguments_mismatch``   was issued for other arguments
``principal_mismatch``   was issued to another principal
``expired``              is past its expiry
=======================  ============================================================

Answers too large to seal into a token a gateway would open
(:data:`~toolkeeper.protocol.sealing.MAX_TOKEN_CHARS`) make the round the handler's failure
(the generic ``isError`` result). An ``inputResponses`` value that is not an object is
``-32602`` with ``data.path`` ``$.params.inputResponses.<key>``. A contract version retired
between two rounds is refused by the schema-version gate (it runs first, as for any call). The
legacy era has neither field: its asks are real requests on the call's stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.faults import invalid_params
from toolkeeper.protocol.sealing import MAX_TOKEN_CHARS, Sealer, SealError
from toolkeeper.registry import Principal
from toolkeeper.server.asking import InputRequired, ModernAsker
from toolkeeper.server.calllog import arguments_digest

__all__ = ["DEFAULT_TTL_S", "PROMPT_PURPOSE", "PURPOSE", "RequestStates", "state_refusal"]

DEFAULT_TTL_S: Final = 600.0
"""How long a requestState can be resumed (as the MCP SDK's default)."""

PURPOSE: Final = "tools/call"
"""The sealing purpose of a tools/call requestState (a tools/list cursor cannot pass for one)."""

PROMPT_PURPOSE: Final = "prompts/get"
"""The sealing purpose of a prompts/get requestState (a tools/call state cannot pass for one,
nor one for a prompt for a tool's)."""


def state_refusal(seal_reason: str) -> JsonRpcError:
    """The -32602 answer to a requestState that cannot be used (see the module docstring)."""
    return invalid_params("Invalid or expired requestState", {
        "reason": "invalid_request_state", "sealReason": seal_reason,
        "path": "$.params.requestState"})


def _principal_key(principal: Principal) -> str:
    return f"{principal.tenant}\n{principal.credential or ''}"


def _binding(subject: Mapping[str, str], arguments: Mapping[str, Any], principal: Principal
             ) -> dict[str, str]:
    return {**subject, "arguments": arguments_digest(arguments),
            "principal": _principal_key(principal)}


def _answers(value: Any) -> dict[str, dict[str, Any]]:
    """A sealed payload's answers (an authentic payload of another shape is ``malformed``)."""
    answers = value.get("answers") if isinstance(value, dict) else None
    if not isinstance(answers, dict) or not all(isinstance(a, dict) for a in answers.values()):
        raise SealError("malformed")
    return answers


class RequestStates:
    """Seals a round's answers into a requestState and opens a retry's (one per gateway).

    One sealing serves every method that can answer ``input_required``: the tool methods
    (:meth:`resume`, :meth:`input_required`) and any other method through the generic ones
    (:meth:`resume_for`, :meth:`input_required_for`) with its own purpose and subject (what
    the state is bound to besides the arguments and the principal, e.g. ``{"prompt": name}``
    for ``prompts/get``)."""

    __slots__ = ("_clock", "_sealer", "_ttl_s")

    def __init__(self, sealer: Sealer, *, ttl_s: float = DEFAULT_TTL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._sealer = sealer
        self._ttl_s = ttl_s
        self._clock = clock

    def resume(self, params: Mapping[str, Any], tool: str, version: str,
               arguments: Mapping[str, Any], principal: Principal) -> ModernAsker | None:
        """The asker of a ``tools/call`` retry (:meth:`resume_for` with purpose
        :data:`PURPOSE`, bound to the tool and its contract version)."""
        if params.get("requestState") is None and params.get("inputResponses") is None:
            return None
        return self.resume_for(PURPOSE, {"tool": tool, "version": version}, params, arguments,
                               principal)

    def input_required(self, signal: InputRequired, tool: str, version: str,
                       arguments: Mapping[str, Any], principal: Principal) -> dict[str, Any]:
        """The ``input_required`` result of a ``tools/call`` round (:meth:`input_required_for`
        with purpose :data:`PURPOSE`)."""
        return self.input_required_for(PURPOSE, {"tool": tool, "version": version}, signal,
                                       arguments, principal)

    def resume_for(self, purpose: str, subject: Mapping[str, str], params: Mapping[str, Any],
                   arguments: Mapping[str, Any], principal: Principal) -> ModernAsker | None:
        """The asker of a retry of ``purpose`` (the method): the sealed answers, then the
        ``inputResponses`` for keys the state does not answer; None for a request that is no
        retry (JsonRpcError -32602 for a state or a response refused)."""
        token = params.get("requestState")
        responses = params.get("inputResponses")
        if token is None and responses is None:
            return None
        responses = responses or {}
        for key, value in responses.items():
            if not isinstance(value, dict):
                raise invalid_params(f"{purpose}: an input response must be an object",
                                     {"path": f"$.params.inputResponses.{key}"})
        answers: dict[str, Mapping[str, Any]] = dict(responses)
        if token is not None:
            try:
                sealed = _answers(self._sealer.open(
                    token, purpose, _binding(subject, arguments, principal),
                    now=self._clock()))
            except SealError as exc:
                raise state_refusal(exc.reason) from None
            answers.update(sealed)
        return ModernAsker(answers)

    def input_required_for(self, purpose: str, subject: Mapping[str, str],
                           signal: InputRequired, arguments: Mapping[str, Any],
                           principal: Principal) -> dict[str, Any]:
        """The ``input_required`` result of a round of ``purpose`` that ``signal`` ended (no
        ``_meta``; ValueError for a state too large to seal)."""
        token = self._sealer.seal(
            purpose, _binding(subject, arguments, principal),
            {"answers": dict(signal.answers)}, ttl_s=self._ttl_s, now=self._clock())
        if len(token) > MAX_TOKEN_CHARS:  # no gateway would open it: the handler's failure
            raise ValueError(f"requestState of {len(token)} characters; at most "
                             f"{MAX_TOKEN_CHARS}")
        return {"resultType": "input_required", "inputRequests": dict(signal.requests),
                "requestState": token}
