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
and an expiry (:data:`DEFAULT_TTL_S` unless configured, ``sealing.request_state_ttl_s``).
The client's retry (a new request with the same ``name`` and ``arguments`` plus
``inputResponses`` and the ``requestState`` echoed) passes the gate, capability and argument
checks like any call; then the state is opened, and the handler is re-run with the sealed
answers and the retry's ``inputResponses``.

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
``replayed``             already ran a ``write`` or ``destructive`` tool (below)
=======================  ============================================================

**A state runs a write once.** A retry of a tool whose side effect is ``write`` or
``destructive`` spends its state before the handler runs (:class:`SpentStates`: the state's
digest recorded, insert-if-absent, in the registry store every replica shares, until the
state's own expiry), and a state already spent is refused ``replayed``. It is claimed
*before* the run, so of two concurrent retries with one state exactly one runs, on any
replica; the state is spent whatever that run ends in (a result, a failure, a timeout, or a
further ``input_required``, whose new state carries the call on). A client that must try
again starts the call afresh, without ``requestState``. ``read`` and ``idempotent_write``
tools are not recorded: their state may be resumed again until it expires. A call without
``requestState`` never touches the record. A store that cannot record the spend refuses the
retry (-32603) rather than run it unrecorded.

**Answers only to what was asked.** A state carries the keys its round asked (``asked``); a
retry's ``inputResponses`` answer only those, others are ignored. A request with
``inputResponses`` and no ``requestState`` carries answers no round of this gateway asked
(every ``input_required`` it sends has a ``requestState``, which the client MUST echo). For a
``write`` or ``destructive`` tool it is a first round: the responses are ignored, every ask is
asked and sealed, and the retry spends its state, so such a tool runs only on answers to asks
it made. For a ``read`` or ``idempotent_write`` tool and for a prompt, the responses answer
the asks whose keys they carry and any other key is ignored: a run on them can do nothing a
resumed state could not, and MRTR asks a server to ignore what it does not recognize rather
than fail (the 2026-07-28 text is cited where a state is opened).

Answers too large to seal into a token a gateway would open
(:data:`~toolkeeper.protocol.sealing.MAX_TOKEN_CHARS`) make the round the handler's failure
(the generic ``isError`` result). An ``inputResponses`` value that is not an object is
``-32602`` with ``data.path`` ``$.params.inputResponses.<key>``. A contract version retired
between two rounds is refused by the schema-version gate (it runs first, as for any call). The
legacy era has neither field: its asks are real requests on the call's stream.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.faults import invalid_params
from toolkeeper.protocol.sealing import MAX_TOKEN_CHARS, Sealer, SealError
from toolkeeper.registry import MemoryStore, Principal
from toolkeeper.registry.spent_states import SpentStateStore
from toolkeeper.server.asking import InputRequired, ModernAsker
from toolkeeper.server.calllog import arguments_digest

__all__ = [
    "DEFAULT_TTL_S",
    "PROMPT_PURPOSE",
    "PURGE_EVERY_S",
    "PURPOSE",
    "RequestStates",
    "SealedState",
    "SpentStates",
    "state_refusal",
]

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


PURGE_EVERY_S: Final = 60.0
"""How often (at most, per process) spending a state also deletes the expired records."""


@dataclass(frozen=True, slots=True)
class SealedState:
    """A requestState that opened: its text and its sealed expiry (epoch seconds)."""

    token: str
    expires_at: float


class SpentStates:
    """The states that have run a tool that must not run twice (module docstring), over a
    :class:`~toolkeeper.registry.spent_states.SpentStateStore`: the registry store, so every
    replica sharing it sees every spend. Spending also purges the expired records, at most
    every :data:`PURGE_EVERY_S` per process, so the table holds only live states."""

    __slots__ = ("_clock", "_lock", "_next_purge", "_store")

    def __init__(self, store: SpentStateStore | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._store: SpentStateStore = store if store is not None else MemoryStore()
        self._clock = clock
        self._lock = threading.Lock()
        self._next_purge = 0.0

    def spend(self, state: SealedState) -> bool:
        """Record ``state`` as spent: True when this call spent it, False when it was spent
        already (by this process or another sharing the store)."""
        now = self._clock()
        with self._lock:
            purge = now >= self._next_purge
            if purge:
                self._next_purge = now + PURGE_EVERY_S
        if purge:
            self._store.purge_spent_states(now)
        digest = hashlib.sha256(state.token.encode("ascii")).hexdigest()
        return self._store.spend_state(digest, state.expires_at)


def _principal_key(principal: Principal) -> str:
    return f"{principal.tenant}\n{principal.credential or ''}"


def _binding(subject: Mapping[str, str], arguments: Mapping[str, Any], principal: Principal
             ) -> dict[str, str]:
    return {**subject, "arguments": arguments_digest(arguments),
            "principal": _principal_key(principal)}


def _answers(value: Any) -> tuple[dict[str, dict[str, Any]], frozenset[str] | None]:
    """A sealed payload's answers and the keys its round asked (None: a state sealed before
    states named them, which takes any response); an authentic payload of another shape is
    ``malformed``. Its ``carried`` value (:class:`InputRequired`) is read by the caller."""
    answers = value.get("answers") if isinstance(value, dict) else None
    if not isinstance(answers, dict) or not all(isinstance(a, dict) for a in answers.values()):
        raise SealError("malformed")
    asked = value.get("asked")
    if asked is None:
        return answers, None
    if not isinstance(asked, list) or not all(isinstance(k, str) for k in asked):
        raise SealError("malformed")
    return answers, frozenset(asked)


class RequestStates:
    """Seals a round's answers into a requestState and opens a retry's (one per gateway).

    One sealing serves every method that can answer ``input_required``: the tool methods
    (:meth:`resume`, :meth:`input_required`) and any other method through the generic ones
    (:meth:`resume_for`, :meth:`input_required_for`) with its own purpose and subject (what
    the state is bound to besides the arguments and the principal, e.g. ``{"prompt": name}``
    for ``prompts/get``)."""

    __slots__ = ("_clock", "_sealer", "_spent", "_ttl_s")

    def __init__(self, sealer: Sealer, *, ttl_s: float = DEFAULT_TTL_S,
                 clock: Callable[[], float] = time.time,
                 spent: SpentStates | None = None) -> None:
        """``spent``: where spent states are recorded (default: this process only, which a
        gateway replaced by the registry store's; :func:`~toolkeeper.server.build_gateway`)."""
        self._sealer = sealer
        self._ttl_s = ttl_s
        self._clock = clock
        self._spent = spent if spent is not None else SpentStates(clock=clock)

    @property
    def ttl_s(self) -> float:
        """How long a state sealed now can be resumed."""
        return self._ttl_s

    def resume(self, params: Mapping[str, Any], tool: str, version: str,
               arguments: Mapping[str, Any], principal: Principal, *,
               unsolicited: bool = False) -> ModernAsker | None:
        """The asker of a ``tools/call`` retry (:meth:`resume_call`'s, without its state)."""
        resumed = self.resume_call(params, tool, version, arguments, principal,
                                   unsolicited=unsolicited)
        return None if resumed is None else resumed[0]

    def resume_call(self, params: Mapping[str, Any], tool: str, version: str,
                    arguments: Mapping[str, Any], principal: Principal, *,
                    unsolicited: bool = False
                    ) -> tuple[ModernAsker, SealedState | None] | None:
        """The asker of a ``tools/call`` retry and the state it opened (:meth:`resume_for`
        with purpose :data:`PURPOSE`, bound to the tool and its contract version); None for
        a call that is no retry. ``unsolicited``: ``inputResponses`` without ``requestState``
        answer the asks whose keys they carry (a tool whose state may be resumed again);
        otherwise they are ignored. The state is None when no ``requestState`` was opened."""
        if params.get("requestState") is None and params.get("inputResponses") is None:
            return None
        return self._open(PURPOSE, {"tool": tool, "version": version}, params, arguments,
                          principal, unsolicited=unsolicited)

    def spend(self, state: SealedState) -> None:
        """Spend ``state`` (:class:`SpentStates`): JsonRpcError ``replayed`` when it was
        spent already. Blocking (a store write): call it off the event loop."""
        if not self._spent.spend(state):
            raise state_refusal("replayed")

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
        opened = self._open(purpose, subject, params, arguments, principal, unsolicited=True)
        return None if opened is None else opened[0]

    def _open(self, purpose: str, subject: Mapping[str, str], params: Mapping[str, Any],
              arguments: Mapping[str, Any], principal: Principal, *, unsolicited: bool
              ) -> tuple[ModernAsker, SealedState | None] | None:
        token = params.get("requestState")
        responses = params.get("inputResponses") or {}
        for key, value in responses.items():
            if not isinstance(value, dict):
                raise invalid_params(f"{purpose}: an input response must be an object",
                                     {"path": f"$.params.inputResponses.{key}"})
        if token is None:
            # MRTR (2026-07-28, basic/patterns/mrtr.mdx): every InputRequiredResult of this
            # gateway carries a requestState, and "the client MUST echo back the exact value
            # of that field when retrying the original request"; so inputResponses without
            # one answer no inputRequests of ours. "If additional, unexpected parameters are
            # provided in the InputResponses object, the server SHOULD ignore any information
            # it does not recognize or need": a tool that may run again on a resumed state
            # takes the answers whose keys it asks and ignores the rest; a tool that runs
            # once per sealed state ignores them all and asks ("Servers MUST NOT assume that
            # clients will fulfill the inputRequests").
            if not unsolicited or not responses:
                return None
            return ModernAsker(dict(responses)), None
        try:
            payload, expires_at = self._sealer.open_expiring(
                token, purpose, _binding(subject, arguments, principal), now=self._clock())
            sealed, asked = _answers(payload)
        except SealError as exc:
            raise state_refusal(exc.reason) from None
        answers: dict[str, Mapping[str, Any]] = {
            key: value for key, value in responses.items() if asked is None or key in asked}
        answers.update(sealed)
        return (ModernAsker(answers, carried=payload.get("carried")),
                SealedState(token, expires_at))

    def input_required_for(self, purpose: str, subject: Mapping[str, str],
                           signal: InputRequired, arguments: Mapping[str, Any],
                           principal: Principal) -> dict[str, Any]:
        """The ``input_required`` result of a round of ``purpose`` that ``signal`` ended (no
        ``_meta``; ValueError for a state too large to seal)."""
        payload: dict[str, Any] = {"answers": dict(signal.answers),
                                   "asked": sorted(signal.requests)}
        if signal.carried is not None:
            payload["carried"] = signal.carried
        token = self._sealer.seal(purpose, _binding(subject, arguments, principal), payload,
                                  ttl_s=self._ttl_s, now=self._clock())
        if len(token) > MAX_TOKEN_CHARS:  # no gateway would open it: the handler's failure
            raise ValueError(f"requestState of {len(token)} characters; at most "
                             f"{MAX_TOKEN_CHARS}")
        return {"resultType": "input_required", "inputRequests": dict(signal.requests),
                "requestState": token}
