"""An upstream's requests to its client, during a forwarded call, passed to the gateway's
caller and answered back.

A legacy-era upstream session declares ``elicitation``, ``sampling`` and ``roots`` in its
``initialize`` (:data:`UPSTREAM_CAPABILITIES`), so the upstream may ask during a call. Each ask
(``elicitation/create``, ``sampling/createMessage``, ``roots/list``) is made of the caller
through the call's context (:meth:`~toolkeeper.server.ToolContext.ask`, which checks the
caller's own capabilities) and its answer goes back to the upstream under the upstream's
request id (the caller sees the gateway's own id: the ids are re-keyed per hop).

Across eras (a modern caller) it is refused, not bridged: a modern caller's asks travel in
``input_required`` results, a round the forwarded call (held open upstream) cannot wait for,
and re-running the upstream's tool on the retry could repeat what it did before asking; so
the upstream is answered -32601 with ``data.reason`` ``"caller_cannot_be_asked"``, and its
tool decides what to do (an SDK tool fails its call). A modern upstream's ``input_required``
is passed on sealed, or bridged for a legacy caller (:mod:`~toolkeeper.upstreams.forwarding`).
The caller's refusal or
silence goes back as a JSON-RPC error: the caller's own error when it answered one, else
-32603 with ``data.reason`` (the :class:`~toolkeeper.errors.AskError` code).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from toolkeeper.errors import AskError, JsonRpcError
from toolkeeper.protocol import Era
from toolkeeper.protocol.codes import INTERNAL_ERROR, METHOD_NOT_FOUND
from toolkeeper.protocol.envelope import error_message, result_message
from toolkeeper.server.content import RESERVED_META_PREFIX
from toolkeeper.server.handlers import ToolContext

__all__ = ["ASKS", "UPSTREAM_CAPABILITIES", "caller_asker"]

ASKS: Final = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
UPSTREAM_CAPABILITIES: Final[dict[str, Any]] = {"elicitation": {}, "sampling": {}, "roots": {}}
"""What a legacy upstream session declares: the gateway passes these asks to its caller."""


def caller_asker(upstream: str, ctx: ToolContext
                 ) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """The client-side answerer of ``upstream``'s requests during one forwarded call."""
    async def answer(request: dict[str, Any]) -> dict[str, Any]:
        rid = request["id"]  # a request (the transports hand over those with an id only)
        method = request.get("method")
        if method not in ASKS:
            return error_message(rid, {"code": METHOD_NOT_FOUND, "message": "Method not found",
                                       "data": method})
        if ctx.era is not Era.LEGACY:
            return error_message(rid, {
                "code": METHOD_NOT_FOUND,
                "message": "the gateway's caller cannot be asked during a forwarded call",
                "data": {"reason": "caller_cannot_be_asked", "upstream": upstream}})
        params = request.get("params")
        params = dict(params) if isinstance(params, dict) else {}
        meta = params.pop("_meta", None)
        if isinstance(meta, dict):
            kept = {k: v for k, v in meta.items() if not k.startswith(RESERVED_META_PREFIX)}
            if kept:
                params["_meta"] = kept
        try:
            result = await ctx.ask(str(method), params)
        except JsonRpcError as exc:  # the caller lacks the capability
            error: dict[str, Any] = {"code": exc.rpc_code, "message": exc.message}
            if exc.rpc_data is not None:
                error["data"] = exc.rpc_data
            return error_message(rid, error)
        except AskError as exc:
            given = exc.data.get("error")
            if isinstance(given, dict) and isinstance(given.get("code"), int):
                return error_message(rid, given)
            return error_message(rid, {"code": INTERNAL_ERROR,
                                       "message": "the gateway's caller gave no answer",
                                       "data": {"reason": exc.code}})
        return result_message(rid, dict(result))
    return answer
