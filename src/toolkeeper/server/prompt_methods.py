"""``prompts/list`` and ``prompts/get`` (both eras) over the bound prompts
(:mod:`~toolkeeper.server.prompts`).

``prompts/list`` lists every bound prompt in name order, on one page (a ``cursor`` is refused:
none is ever issued); in the modern era it carries the same caching hints as ``tools/list``.
``prompts/get`` answers ``{"description", "messages"}``. Refused before the handler runs, each
with -32602 and ``data.path`` (``data.reason`` where the params are well formed):

=====================  =======================================  ============================
``reason``             the request ...                          ``data.path``
=====================  =======================================  ============================
(none)                 has a ``name`` that is not a string,     ``$.params.name``,
                       ``arguments`` that are not an object of  ``$.params.arguments[.<k>]``,
                       strings, a ``requestState`` that is not  ``$.params.requestState``,
                       a string or ``inputResponses`` that are  ``$.params.inputResponses``
                       not an object
``unknown_prompt``     names no bound prompt (as the MCP SDK)   ``$.params.name``
``missing_argument``   lacks a required argument                ``$.params.arguments.<k>``
``unknown_argument``   gives an argument the prompt does not    ``$.params.arguments.<k>``
                       declare
=====================  =======================================  ============================

A prompt handler asks the caller back through its :class:`PromptContext` as a tool handler
does: in the modern era a round ends with ``resultType: "input_required"`` and a
``requestState`` sealed for purpose ``prompts/get`` and bound to the prompt, the arguments'
digest and the principal (:mod:`~toolkeeper.server.resuming`, refused the same way as a tool
call's); the retry with ``inputResponses`` and that state re-runs the handler. A handler that
raises a JSON-RPC error (-32021 for an ask the caller has no capability for) has it answered;
any other exception, or messages a client could not parse, is -32603 with a generic message
(logged here, never sent). Prompts are not tool calls: the call log and the call timeout do
not apply to them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from functools import partial
from typing import Any, Final

from msgspec import Raw

from toolkeeper.errors import AskError, JsonRpcError
from toolkeeper.protocol import (
    CacheHint,
    Call,
    Deferred,
    Emit,
    Era,
    Method,
    MethodResult,
    encode_message,
    plain_express,
)
from toolkeeper.protocol.faults import internal_error, invalid_params
from toolkeeper.registry import Principal
from toolkeeper.server.asking import InputAsker, InputRequired
from toolkeeper.server.handlers import HandlerContext
from toolkeeper.server.prompts import PromptBinding, Prompts, to_prompt_messages
from toolkeeper.server.resuming import PROMPT_PURPOSE, RequestStates

__all__ = ["PromptContext", "PromptMethods"]

_log = logging.getLogger("toolkeeper.server")

_FIELDS: Final[tuple[tuple[str, type, str], ...]] = (
    ("name", str, "a string"), ("arguments", dict, "an object"),
    ("requestState", str, "a string"), ("inputResponses", dict, "an object"))
"""The ``prompts/get`` params checked by type (``name`` is also required)."""


class PromptContext(HandlerContext):
    """What a running prompt handler can do besides returning its messages."""

    def __init__(self, call: Call, prompt: PromptBinding, principal: Any, emit: Emit,
                 tools_changed: Callable[[], None] | None = None,
                 asker: InputAsker | None = None) -> None:
        self._call = call
        self._emit = emit
        self._tools_changed = tools_changed
        if asker is not None:
            self._asker = asker
        self.prompt = prompt
        self.principal = principal

    @property
    def name(self) -> str:
        """The prompt's name."""
        return self.prompt.name


def _refused(message: str, path: str, reason: str | None = None) -> JsonRpcError:
    data: dict[str, str] = {"path": path}
    if reason is not None:
        data["reason"] = reason
    return invalid_params(f"prompts/get: {message}", data)


def _checked_params(call: Call) -> tuple[str, dict[str, str]]:
    params = call.params
    for key, kind, what in _FIELDS:
        value = params.get(key)
        if (value is not None or key == "name") and not isinstance(value, kind):
            raise _refused(f"{key} must be {what}", f"$.params.{key}")
    arguments = params.get("arguments") or {}
    for key, value in arguments.items():
        if not isinstance(value, str):
            raise _refused("argument values are strings", f"$.params.arguments.{key}")
    return params["name"], arguments


def _checked_arguments(prompt: PromptBinding, arguments: dict[str, str]) -> None:
    declared = {a.name for a in prompt.arguments}
    for key in sorted(arguments):
        if key not in declared:
            raise _refused(f"prompt {prompt.name!r} has no argument {key!r}",
                           f"$.params.arguments.{key}", "unknown_argument")
    for argument in prompt.arguments:
        if argument.required and argument.name not in arguments:
            raise _refused(f"prompt {prompt.name!r} needs argument {argument.name!r}",
                           f"$.params.arguments.{argument.name}", "missing_argument")


class PromptMethods:
    """The ``prompts/list`` and ``prompts/get`` method handlers."""

    def __init__(self, prompts: Prompts, states: RequestStates,
                 tools_changed: Callable[[], None] | None = None) -> None:
        self._prompts = prompts
        self._states = states
        self._tools_changed = tools_changed

    def methods(self, list_cache: CacheHint) -> list[Method]:
        """The two rows of the method table (``prompts/list`` cached like ``tools/list``)."""
        return [Method("prompts/list", self.list_prompts, cache=list_cache,
                       express=plain_express(self.list_prompts)),
                Method("prompts/get", self.get_prompt)]

    def list_prompts(self, call: Call) -> dict[str, Any]:
        if call.params.get("cursor") is not None:
            raise invalid_params("prompts/list: unknown cursor (prompts are listed on one page)",
                                 {"path": "$.params.cursor"})
        return {"prompts": [prompt.to_wire() for prompt in self._prompts]}

    def get_prompt(self, call: Call) -> MethodResult:
        name, arguments = _checked_params(call)
        prompt = self._prompts.lookup(name)
        if prompt is None:
            raise _refused(f"Unknown prompt: {name}", "$.params.name", "unknown_prompt")
        _checked_arguments(prompt, arguments)
        principal = call.principal
        if not isinstance(principal, Principal):
            raise TypeError("prompts/get needs a Principal from the principal resolver")
        asker = None
        if prompt.takes_context and call.era is Era.MODERN:
            asker = self._states.resume_for(PROMPT_PURPOSE, {"prompt": name}, call.params,
                                            arguments, principal)
        return Deferred(partial(self._run, call, prompt, arguments, asker))

    async def _run(self, call: Call, prompt: PromptBinding, arguments: dict[str, str],
                   asker: InputAsker | None, emit: Emit) -> dict[str, Any]:
        try:
            if prompt.takes_context:
                value = prompt.function(arguments, PromptContext(
                    call, prompt, call.principal, emit, self._tools_changed, asker))
            else:
                value = prompt.function(arguments)
            if inspect.isawaitable(value):
                value = await value
        except InputRequired as signal:
            return self._ask_back(call, prompt, arguments, signal)
        except JsonRpcError:
            raise  # the handler's own protocol error (-32021 for a capability it lacks)
        except AskError as exc:  # the client's refusal or silence: one line, as for a tool
            _log.warning("prompt %s: an ask the handler did not catch got no result (%s)",
                         prompt.name, exc.code)
            _log.debug("prompt %s: the uncaught ask", prompt.name, exc_info=exc)
            raise internal_error() from None
        except Exception:
            _log.exception("prompt %s raised", prompt.name)
            raise internal_error() from None
        try:
            out = {"description": prompt.description, "messages": to_prompt_messages(value)}
            encode_message(out)  # not JSON (a NaN, bytes): fails here, not in the transport
        except Exception:
            _log.exception("prompt %s returned messages a client could not read", prompt.name)
            raise internal_error() from None
        return out

    def _ask_back(self, call: Call, prompt: PromptBinding, arguments: dict[str, str],
                  signal: InputRequired) -> dict[str, Any]:
        """A modern round that ended with unanswered asks: its ``input_required`` result."""
        try:
            out = self._states.input_required_for(PROMPT_PURPOSE, {"prompt": prompt.name},
                                                  signal, arguments, call.principal)
            out["inputRequests"] = Raw(encode_message(out["inputRequests"]))
        except Exception:
            _log.exception("prompt %s asked what cannot be sent", prompt.name)
            raise internal_error() from None
        return out
