"""Running a method: the handler call, the exception boundary, and era-specific result stamping.

``run_method`` is where a handler's result or exception becomes a Reply (or a Pending whose
completion does the same). Results are finished per era: the modern era adds ``resultType``,
cache hints and the ``serverInfo`` stamp; the legacy era strips those fields (the 2025 wire
never carries them), so era rules never mix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from toolkeeper.protocol.codes import RATE_LIMITED, http_status_for
from toolkeeper.protocol.envelope import RequestId, encode_message, error_message, result_message
from toolkeeper.protocol.faults import wire_error
from toolkeeper.protocol.meta import SERVER_INFO_KEY
from toolkeeper.protocol.methods import CacheHint, Call, Deferred, Emit, Method, MethodResult
from toolkeeper.protocol.outcome import Finish, Outcome, Pending, Reply
from toolkeeper.protocol.versions import Era

__all__ = [
    "LegacyFinish",
    "ServerIdentity",
    "answer_error_reply",
    "error_reply",
    "finish_result",
    "finisher",
    "plain_express",
    "run_method",
]

_MODERN_ONLY = ("resultType", "ttlMs", "cacheScope")
_LEGACY = Era.LEGACY
_LEGACY_ANSWER_STATUS = 200
"""Legacy era (2025-11-25): the HTTP status of every JSON-RPC error that answers a request the
session dispatched (unknown tool, invalid params, method not found, a tool's protocol error).
The 2025 transport keeps 4xx for what it rejects itself (no or unknown session, a body that is
not JSON-RPC); its clients (``mcp`` 1.x, the TypeScript SDK, MCP Inspector) read any 4xx as a
transport failure and lose the error's code and data (mcp-wire 4.5 and 10)."""


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    """The server's ``Implementation`` (``serverInfo``)."""

    name: str
    version: str
    title: str | None = None
    _wire: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        wire: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            wire["title"] = self.title
        object.__setattr__(self, "_wire", wire)  # built once: every modern result carries it

    def to_wire(self) -> dict[str, Any]:
        return self._wire.copy()


def _retry_after(data: Any) -> tuple[tuple[str, str], ...]:
    seconds = data.get("retryAfterS") if isinstance(data, dict) else None
    return (("retry-after", str(seconds)),) if type(seconds) is int and seconds >= 0 else ()


_ERROR_HEADERS: Mapping[int, Callable[[Any], tuple[tuple[str, str], ...]]] = {
    RATE_LIMITED: _retry_after,
}
"""Error code -> the HTTP headers its reply carries, made from the error's ``data`` (both eras:
a legacy reply is 200, but the header still tells a proxy or a client when to come back)."""


def _headers_for(error: dict[str, Any], headers: tuple[tuple[str, str], ...]
                 ) -> tuple[tuple[str, str], ...]:
    extra = _ERROR_HEADERS.get(error["code"])
    return headers if extra is None else (*headers, *extra(error.get("data")))


def error_reply(request_id: RequestId | None, exc: BaseException,
                headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """The Reply for an exception, with the modern table's status for its code (also what the
    legacy transport uses for what it rejects itself: a session or an envelope)."""
    error = wire_error(exc)
    return Reply(error_message(request_id, error), http_status_for(error["code"]),
                 _headers_for(error, headers))


def answer_error_reply(request_id: RequestId | None, exc: BaseException, era: Era,
                       headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """The Reply for an exception that answers a request an era's session dispatched: the modern
    table's status, or 200 in the legacy era (``_LEGACY_ANSWER_STATUS``), so era rules never
    mix."""
    if era is _LEGACY:
        error = wire_error(exc)
        return Reply(error_message(request_id, error), _LEGACY_ANSWER_STATUS,
                     _headers_for(error, headers))
    return error_reply(request_id, exc, headers)


def finish_result(result: Mapping[str, Any], era: Era, cache: CacheHint | None,
                  identity: ServerIdentity) -> dict[str, Any]:
    """Stamp (modern) or strip (legacy) the era's bookkeeping fields on a copy of a result."""
    if era is _LEGACY:
        out = dict(result)
        for key in _MODERN_ONLY:
            out.pop(key, None)
        return out
    return _stamp_modern(_own(result), cache, identity)


def _own(result: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a modern result whose ``_meta`` is a dict of its own."""
    out = dict(result)
    meta = out.get("_meta")
    out["_meta"] = dict(meta) if meta else {}
    return out


def _stamp_modern(out: dict[str, Any], cache: CacheHint | None,
                  identity: ServerIdentity) -> dict[str, Any]:
    """``resultType``, the cache hints and ``serverInfo``, set in place on a result whose dict
    and ``_meta`` dict are its own (:func:`_own`)."""
    if "resultType" not in out:
        out["resultType"] = "complete"
    if cache is not None and out["resultType"] == "complete":
        out.setdefault("ttlMs", cache.ttl_ms)
        out.setdefault("cacheScope", cache.scope)
    meta = out["_meta"]
    if meta.get(SERVER_INFO_KEY) is None:
        meta[SERVER_INFO_KEY] = identity.to_wire()
    return out


def finisher(cache: CacheHint | None, identity: ServerIdentity) -> Finish:
    """What :func:`run_method` does with a modern handler's result, for an express lane: the
    result, handed over, finished as a Reply to ``request_id``."""
    return partial(_finish, cache, identity)


def _finish(cache: CacheHint | None, identity: ServerIdentity, request_id: RequestId,
            result: dict[str, Any]) -> Reply:
    message = result_message(request_id, _stamp_modern(result, cache, identity))
    return Reply(message, 200, (), encode_message(message))


class LegacyFinish:
    """The :data:`~toolkeeper.protocol.Finish` of a legacy session's express lane: the result
    (handed over) without the modern bookkeeping fields, as :func:`run_method` finishes it in
    that era, made the Reply to a request id with the session's ``headers`` and its body
    encoded at once. :meth:`failed` answers an exception as that era answers one."""

    __slots__ = ("headers",)

    def __init__(self, headers: tuple[tuple[str, str], ...]) -> None:
        self.headers = headers

    def __call__(self, request_id: RequestId, result: dict[str, Any]) -> Reply:
        for key in _MODERN_ONLY:
            result.pop(key, None)
        message = result_message(request_id, result)
        return Reply(message, 200, self.headers, encode_message(message))

    def failed(self, request_id: RequestId, exc: BaseException) -> Reply:
        return answer_error_reply(request_id, exc, _LEGACY, self.headers)


def plain_express(handler: Callable[[Call], MethodResult]) -> Callable[[Call, Finish], Reply]:
    """An express lane for a method whose handler answers at once (never with a Deferred):
    the handler's result, finished as :func:`run_method` finishes it in the call's era. (Its
    exceptions are the kernel's to answer, as they are on the ordinary path.)"""
    def express(call: Call, finish: Finish) -> Reply:
        result = handler(call)
        if isinstance(result, Deferred):
            raise TypeError(f"{call.method}: a plain express lane got a Deferred")
        return finish(call.request_id, _own(result) if call.era is not _LEGACY else dict(result))
    return express


def run_method(method: Method, call: Call, identity: ServerIdentity,
               headers: tuple[tuple[str, str], ...] = ()) -> Outcome:
    """Call the handler; an immediate result is a Reply, a Deferred becomes a Pending."""
    try:
        result = method.handler(call)
        if not isinstance(result, Deferred):
            return Reply(result_message(call.request_id, finish_result(
                result, call.era, method.cache, identity)), 200, headers)
    except Exception as exc:
        return answer_error_reply(call.request_id, exc, call.era, headers)
    run = result.run

    async def complete(emit: Emit) -> Reply:
        try:
            value = await run(emit)
            return Reply(result_message(call.request_id, finish_result(
                value, call.era, method.cache, identity)), 200, headers)
        except Exception as exc:
            return answer_error_reply(call.request_id, exc, call.era, headers)

    return Pending(call.request_id, complete, headers, result.stream)
