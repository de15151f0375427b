"""The seam through which a running handler asks the caller back: elicitation, sampling, roots.

A handler asks through its context, the same way in either protocol era::

    @handlers.tool("files.purge")
    async def purge(arguments, ctx):
        answer = await ctx.elicit("Delete 40 files?", {"type": "object", "properties": {
            "confirm": {"type": "boolean"}}, "required": ["confirm"]})
        if answer["action"] != "accept" or not answer["content"]["confirm"]:
            return "kept"
        both = await ctx.ask_all({
            "summary": ("sampling/createMessage", {"messages": [...], "maxTokens": 50}),
            "roots": ("roots/list", {})})
        ...

Every ask is one call of :meth:`InputAsker.ask` with the wire method (a row of
:data:`ASK_CAPABILITIES`) and its wire params; it returns the client's result as a plain
JSON object (``ElicitResult``, ``CreateMessageResult``, ``ListRootsResult``: the handler reads
the wire field names it would read in any MCP SDK). Before asking, the context checks the
capability the method needs (:func:`required_capabilities`) against what the caller declared:
an ask for one it did not declare stops the call with -32021 in the modern era (-32602 with the
same ``requiredCapabilities`` data in the legacy era), as ``require_capabilities`` does. A form
is sent only to a client whose ``elicitation`` names no mode or names ``form`` (one declaring
``{"url": {}}`` alone supports URL mode only).

Two askers implement the interface, one per era:

- **Legacy (2025-11-25)**: a real server-to-client JSON-RPC request on the call's SSE stream,
  its response routed back by id (``LegacyAsker``, in the transports).
- **Modern (2026-07-28, SEP-2322, "multi round-trip requests")**: :class:`ModernAsker`. The
  modern era has no server-to-client requests: the call is *answered* with
  ``resultType: "input_required"``, its ``inputRequests`` and a sealed ``requestState``, and
  the client *retries* ``tools/call`` with ``inputResponses`` and that ``requestState``.

The modern design: **the handler is re-run** with the answers recorded so far. Each ask has a
key, the ``inputRequests``/``inputResponses`` key on the wire: the ``key=`` the handler gives,
else its position (``"0"``, ``"1"``, ... in the order the handler makes its asks; a key asked
twice in one run, e.g. an explicit ``"1"`` and the second positional ask, is a ValueError). An ask whose
key has an answer returns it at once, without asking; the first unanswered ask records its
request and raises :class:`InputRequired`, which ends the round (the handler unwinds: its
``finally`` blocks run). Asks made together (:meth:`ToolContext.ask_all`, or
``asyncio.gather`` of asks) all start before the round ends, so every one of them is in that
round's ``inputRequests``. The answers the handler used travel inside the sealed
``requestState`` (:mod:`toolkeeper.server.resuming`), never in server memory, so any replica
sharing the sealing key resumes the call; a retry's ``inputResponses`` add to them (a key the
state already answers keeps its sealed answer; keys nobody asks are ignored; answers sent
without ``requestState`` answer a ``read`` or ``idempotent_write`` tool's asks and are ignored
by a ``write`` or ``destructive`` tool, which asks them). An unanswered key is
simply asked again in the next ``input_required``. A handler must therefore be deterministic
up to its asks (the same arguments and answers make the same asks in the same order) and
should do its side effects after its last ask; it must not swallow :class:`InputRequired` (a
``BaseException``, like ``CancelledError``, so ``except Exception`` lets it through).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

__all__ = [
    "ASK_CAPABILITIES",
    "InputAsker",
    "InputRequired",
    "ModernAsker",
    "ask_all",
    "elicitation_params",
    "required_capabilities",
    "sampling_params",
]

ASK_CAPABILITIES: Mapping[str, Mapping[str, Any]] = {
    "elicitation/create": {"elicitation": {}},
    "sampling/createMessage": {"sampling": {}},
    "roots/list": {"roots": {}},
}
"""The client capability each method a handler may ask needs (the spec's
``ClientCapabilities``); a method not in the table cannot be asked (ValueError)."""


def _present(value: Any) -> bool:
    return value is not None


def _url(value: Any) -> bool:
    return isinstance(value, str) and value == "url"


def _some_context(value: Any) -> bool:
    return value is not None and value != "none"


# Refinements of a row: params that need a sub-capability, every one that applies (mcp-wire 4:
# URL-mode elicitation, sampling with tools; ``includeContext`` other than ``"none"`` only for
# a client declaring ``sampling.context``, 2025-11-25 ``CreateMessageRequest``).
_REFINED: Mapping[str, tuple[tuple[str, Callable[[Any], bool], str], ...]] = {
    "elicitation/create": (("mode", _url, "url"),),
    "sampling/createMessage": (("tools", _present, "tools"),
                               ("includeContext", _some_context, "context")),
}


# The default mode of a row whose capability names its modes (ClientCapabilities
# ``elicitation {form?, url?}``, 2025-11-25 and 2026): an object naming no mode supports the
# default one only (backwards compatibility); one naming a mode supports just those it names.
_MODES: Mapping[str, tuple[str, frozenset[str], Mapping[str, Any]]] = {
    "elicitation/create": ("elicitation", frozenset({"form", "url"}),
                           {"elicitation": {"form": {}}}),
}


def required_capabilities(method: str, params: Mapping[str, Any],
                          declared: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """The client capabilities an ask of ``method`` with ``params`` needs; given what the
    client ``declared``, an ask in a default mode (a form) needs that mode named when the
    client names its modes (``{"elicitation": {"url": {}}}`` cannot be sent a form)."""
    try:
        base = ASK_CAPABILITIES[method]
    except KeyError:
        raise ValueError(f"a handler cannot ask {method!r}; one of "
                         f"{sorted(ASK_CAPABILITIES)}") from None
    (capability,) = base
    subs: dict[str, Any] = {sub: {} for key, applies, sub in _REFINED.get(method, ())
                            if applies(params.get(key))}
    if subs:
        return {capability: subs}
    modes = _MODES.get(method)
    if modes is not None and declared is not None:
        capability, named, needs = modes
        have = declared.get(capability)
        if isinstance(have, dict) and not named.isdisjoint(have):
            return needs
    return base


def elicitation_params(message: str, requested_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The params of a form-mode ``elicitation/create``."""
    return {"mode": "form", "message": message, "requestedSchema": dict(requested_schema)}


def sampling_params(messages: Sequence[Mapping[str, Any]], *, max_tokens: int,
                    system_prompt: str | None = None, temperature: float | None = None,
                    stop_sequences: Sequence[str] | None = None,
                    model_preferences: Mapping[str, Any] | None = None,
                    include_context: str | None = None,
                    metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The params of a ``sampling/createMessage`` (the keywords are its params in snake case,
    omitted when None)."""
    params: dict[str, Any] = {"messages": [dict(m) for m in messages], "maxTokens": max_tokens}
    optional: tuple[tuple[str, Any], ...] = (
        ("systemPrompt", system_prompt), ("temperature", temperature),
        ("stopSequences", None if stop_sequences is None else list(stop_sequences)),
        ("modelPreferences", model_preferences), ("includeContext", include_context),
        ("metadata", metadata))
    params.update((key, value) for key, value in optional if value is not None)
    return params


class InputAsker(Protocol):
    """Asks the caller of one tool call for input, in that call's era."""

    async def ask(self, method: str, params: Mapping[str, Any], *,
                  key: str | None = None) -> Mapping[str, Any]:
        """The client's result for the request ``method`` with ``params`` (capabilities were
        checked by the caller of ``ask``). ``key`` names the request in the modern era's
        ``inputRequests`` (None: its position); an era without such keys ignores it."""
        ...


async def ask_all(asker: InputAsker, requests: Mapping[str, tuple[str, Mapping[str, Any]]]
                  ) -> dict[str, Mapping[str, Any]]:
    """Several asks at once (key -> ``(method, params)``), their results by key: concurrent
    requests in the legacy era, one round's ``inputRequests`` in the modern era."""
    keys = list(requests)
    results = await asyncio.gather(*(asker.ask(*requests[key], key=key) for key in keys))
    return dict(zip(keys, results, strict=True))


class InputRequired(BaseException):
    """A modern round ends: ``requests`` (key -> ``{"method", "params"}``) are unanswered;
    ``answers`` (key -> client result) are the answers the handler used so far.

    Outside the :mod:`toolkeeper.errors` tree on purpose: it is control flow between the
    handler's context and the call runner, like ``CancelledError``, and a handler's
    ``except Exception`` must not catch it."""

    def __init__(self, requests: dict[str, dict[str, Any]],
                 answers: Mapping[str, Mapping[str, Any]], *, carried: Any = None) -> None:
        """``carried``: JSON sealed into the round's ``requestState`` beside the answers and
        given back on the retry (:attr:`ModernAsker.carried`): a forwarding handler's
        upstream state (None: nothing)."""
        super().__init__(sorted(requests))
        self.requests = requests
        self.answers = answers
        self.carried = carried


class ModernAsker:
    """The modern era's asker (see the module docstring): answers from the given ones by key,
    else records the request and raises :class:`InputRequired` carrying the answers used."""

    __slots__ = ("_answers", "_next", "_requests", "_used", "carried")

    def __init__(self, answers: Mapping[str, Mapping[str, Any]] | None = None, *,
                 carried: Any = None) -> None:
        self._answers: Mapping[str, Mapping[str, Any]] = answers or {}
        self._next = 0
        self._requests: dict[str, dict[str, Any]] = {}
        self._used: dict[str, Mapping[str, Any]] = {}
        self.carried = carried
        """What the previous round sealed beside its answers (:class:`InputRequired`)."""

    @property
    def answers(self) -> Mapping[str, Mapping[str, Any]]:
        """Every answer this retry has: the sealed ones and the ``inputResponses`` to the
        keys the previous round asked."""
        return self._answers

    async def ask(self, method: str, params: Mapping[str, Any], *,
                  key: str | None = None) -> Mapping[str, Any]:
        if key is None:
            key = str(self._next)
        self._next += 1
        if key in self._used or key in self._requests:
            # Two asks under one key would share one answer (an explicit "1" and the second
            # positional ask, say): the second would get the first's result.
            raise ValueError(f"ask key {key!r} asked twice in one run; give each ask its "
                             "own key (positions are \"0\", \"1\", ...)")
        answer = self._answers.get(key)
        if answer is not None:
            self._used[key] = answer
            return answer
        # Both dicts are shared by every ask of the round: asks gathered together each add
        # theirs before the round's InputRequired reaches the runner.
        self._requests[key] = {"method": method, "params": dict(params)}
        raise InputRequired(self._requests, self._used)
