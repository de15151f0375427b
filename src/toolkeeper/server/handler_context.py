"""What a running handler can do besides computing its result: :class:`HandlerContext`
(progress, logging, announcing a tools change, closing a resumable stream, asking the caller
back) and :class:`ToolContext`, the context a tool handler is given. The handler API
(:mod:`~toolkeeper.server.handlers`), the typed-handler derivation and the call path all use
them; this module imports none of those.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import AskError, CapabilityRequiredError, JsonRpcError
from toolkeeper.protocol import (
    LOG_LEVELS,
    Backchannel,
    Call,
    Emit,
    Era,
    log_level_allows,
    missing_capabilities,
    notification_message,
)
from toolkeeper.protocol.faults import invalid_params, missing_capability
from toolkeeper.server.asking import (
    InputAsker,
    InputRequired,
    ModernAsker,
    ask_all,
    elicitation_params,
    required_capabilities,
    sampling_params,
)

__all__ = ["HandlerContext", "ToolContext", "capability_error"]


def capability_error(required: Mapping[str, Any], era: Era) -> JsonRpcError:
    """-32021 in the modern era; the legacy era has no such code, so it is -32602 with the
    same ``requiredCapabilities`` data (era rules never mix)."""
    if era is Era.MODERN:
        return missing_capability(required)
    return invalid_params("Missing required client capability",
                          {"requiredCapabilities": dict(required)})


_NUMBER = (int, float)
_INF = math.inf


class HandlerContext:
    """What a running handler (a tool's or a prompt's) can do besides computing its result:
    progress, logging, and asking the caller back. :class:`ToolContext` adds the tool;
    :class:`~toolkeeper.server.prompt_methods.PromptContext` the prompt."""

    _asker: InputAsker | None = None
    _call: Call
    _emit: Emit
    _tools_changed: Callable[[], None] | None
    principal: Any

    @property
    def era(self) -> Era:
        return self._call.era

    @property
    def client_capabilities(self) -> Mapping[str, Any]:
        return self._call.client_capabilities

    @property
    def log_level(self) -> str | None:
        """The lowest level of the logs the caller asked for (modern: this request's ``_meta``
        logLevel; legacy: ``logging/setLevel``); None: it asked for none."""
        return self._call.log_level

    @property
    def request_meta(self) -> Mapping[str, Any]:
        """The request's ``params._meta`` (empty when it has none): what a handler that
        forwards the call passes on, less the keys of this hop."""
        meta = self._call.params.get("_meta")
        return meta if isinstance(meta, Mapping) else {}

    async def progress(self, progress: float, total: float | None = None,
                       message: str | None = None) -> None:
        """Report progress; sent only when the caller gave a progress token (SSE on HTTP).
        ``progress`` and ``total`` must be finite numbers and ``message`` a string (ValueError
        otherwise, whether or not anything is sent: JSON has no NaN, and a client drops a
        progress without one or with a message that is not a string)."""
        if not (progress.__class__ is int and (total is None or total.__class__ is int)) and (
                not (isinstance(progress, _NUMBER) and progress.__class__ is not bool
                     and -_INF < progress < _INF) or (total is not None and not (
                         isinstance(total, _NUMBER) and total.__class__ is not bool
                         and -_INF < total < _INF))):  # inline: progress is called in loops
            raise ValueError(f"progress {progress!r} of {total!r}: not finite numbers")
        if message is not None and message.__class__ is not str:
            raise ValueError(f"progress message {message!r}: not a string")
        token = self._call.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._emit(notification_message("notifications/progress", params))

    async def log(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """Log to the caller; sent only at or above the level the caller asked for (modern:
        ``_meta`` logLevel on this request; legacy: ``logging/setLevel``). ``logger``, if
        given, must be a string (ValueError: a client drops the line otherwise); ``data`` must
        be JSON when the line is sent (a NaN or an infinity is a ValueError then)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        if logger is not None and logger.__class__ is not str:
            raise ValueError(f"logger {logger!r}: not a string")
        if not log_level_allows(self._call.log_level, level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._emit(notification_message("notifications/message", params))

    def notify_tools_changed(self) -> None:
        """Tell listening clients to re-fetch ``tools/list`` (modern ``subscriptions/listen``
        streams, legacy standalone GET streams), as a registry change does. For a handler whose
        tools depend on state outside the registry; publishing a contract needs no call."""
        if self._tools_changed is not None:
            self._tools_changed()

    async def close_stream(self) -> bool:
        """End the response stream now and go on working: the client reconnects with
        ``Last-Event-ID`` after the stream's ``retry`` hint and gets what was sent meanwhile,
        the result included (legacy era over HTTP, a 2025-11-25 session; SEP-1699 polling).
        False, and nothing done, where the stream cannot be resumed (the modern era, stdio,
        JSON mode, an older protocol version)."""
        emit = self._emit
        if isinstance(emit, Backchannel):
            return await emit.close_stream()
        return False

    def require_capabilities(self, required: Mapping[str, Any]) -> None:
        """Stop the call unless the client declared these capabilities (-32021)."""
        if missing_capabilities(required, self._call.client_capabilities):
            error = capability_error(required, self._call.era)
            raise CapabilityRequiredError(error.rpc_code, error.message, error.rpc_data)

    async def ask(self, method: str, params: Mapping[str, Any], *,
                  key: str | None = None) -> Mapping[str, Any]:
        """Ask the caller ``method`` (``elicitation/create``, ``sampling/createMessage`` or
        ``roots/list``) with wire ``params``: the client's result. -32021 first when the
        caller did not declare the capability the method needs. ``key``: the request's
        name in a modern ``input_required`` (default: its position among the asks)."""
        self.require_capabilities(required_capabilities(
            method, params, self._call.client_capabilities))
        return await self._input_asker().ask(method, params, key=key)

    async def ask_all(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]]
                      ) -> dict[str, Mapping[str, Any]]:
        """Several asks made together (key -> ``(method, params)``), their results by key:
        one modern round, concurrent legacy requests. Every capability is checked before
        anything is asked."""
        for method, params in requests.values():
            self.require_capabilities(required_capabilities(
                method, params, self._call.client_capabilities))
        return await ask_all(self._input_asker(), requests)

    async def elicit(self, message: str, requested_schema: Mapping[str, Any], *,
                     key: str | None = None) -> Mapping[str, Any]:
        """Ask the user for a form (``elicitation/create``, form mode): the ``ElicitResult``
        (``action`` ``accept``/``decline``/``cancel``, ``content`` when accepted)."""
        return await self.ask("elicitation/create", elicitation_params(
            message, requested_schema), key=key)

    async def sample(self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int,
                     key: str | None = None, **options: Any) -> Mapping[str, Any]:
        """Ask the client's model (``sampling/createMessage``; ``options`` are its other
        params in snake case, see :func:`~toolkeeper.server.asking.sampling_params`): the
        ``CreateMessageResult`` (``role``, ``content``, ``model``, ``stopReason``)."""
        return await self.ask("sampling/createMessage",
                              sampling_params(messages, max_tokens=max_tokens, **options),
                              key=key)

    async def list_roots(self, *, key: str | None = None) -> Mapping[str, Any]:
        """Ask the client for its roots (``roots/list``): the ``ListRootsResult``
        (``roots``: ``[{"uri", "name"?}]``)."""
        return await self.ask("roots/list", {}, key=key)

    def retried(self) -> tuple[Mapping[str, Mapping[str, Any]], Any] | None:
        """A modern retry's answers (the sealed ones and the ``inputResponses`` to what the
        previous round asked) and what that round carried (:meth:`pass_on_input_required`);
        None for a first round and in the legacy era."""
        asker = self._asker
        if isinstance(asker, ModernAsker) and (asker.answers or asker.carried is not None):
            return asker.answers, asker.carried
        return None

    def pass_on_input_required(self, requests: Mapping[str, Mapping[str, Any]], *,
                               carried: Any = None) -> NoReturn:
        """End this modern round with ``requests`` (key -> ``{"method", "params"}``, methods
        of :data:`~toolkeeper.server.asking.ASK_CAPABILITIES`) as its ``inputRequests``,
        as another server asked them (a forwarding handler's): each is checked against the
        caller's capabilities first (-32021, as :meth:`ask`); ``carried`` (JSON) is sealed
        in the round's ``requestState`` and comes back from :meth:`retried`. Only in the
        modern era (:class:`~toolkeeper.errors.AskError` ``ask.unavailable`` else)."""
        if self._call.era is not Era.MODERN:
            raise AskError("only a modern call is answered input_required",
                           code="ask.unavailable")
        asks = {key: {"method": request["method"], "params": dict(request.get("params") or {})}
                for key, request in requests.items()}
        for ask in asks.values():
            self.require_capabilities(required_capabilities(
                ask["method"], ask["params"], self._call.client_capabilities))
        raise InputRequired(asks, {}, carried=carried)

    def _input_asker(self) -> InputAsker:
        asker = self._asker
        if asker is None:
            if self._call.era is Era.MODERN:
                asker = self._asker = ModernAsker()
            elif isinstance(self._emit, Backchannel):  # legacy: a request on the stream
                asker = self._asker = self._emit
            else:
                raise AskError("this call's response cannot carry a request to the client "
                               "(JSON mode, or no session)", code="ask.unavailable")
        return asker


class ToolContext(HandlerContext):
    """What a running tool handler can do besides computing its result."""

    def __init__(self, call: Call, spec: ToolSpec, principal: Any, emit: Emit,
                 tools_changed: Callable[[], None] | None = None,
                 asker: InputAsker | None = None) -> None:
        # No super().__init__: one is built per call, and every field is set here.
        self._call = call
        self._emit = emit
        self._tools_changed = tools_changed
        if asker is not None:  # a call that asks nothing pays no store
            self._asker = asker
        self.spec = spec
        self.principal = principal

    @property
    def tool(self) -> str:
        return self.spec.name

    @property
    def version(self) -> Version:
        return self.spec.version
