"""``subscriptions/listen`` (modern era, mcp-wire 7.7): a stream of list_changed notifications.

The response is always a stream (SSE on HTTP, even in JSON mode). Its first message is
``notifications/subscriptions/acknowledged`` naming the honored subset of the requested filter;
then each opted-in notification, every one tagged with ``_meta`` subscriptionId = the listen
request's id. The gateway serves tools only, so ``toolsListChanged`` is the one filter it
honors; the others are validated and left out of the acknowledgement. The stream ends when the
client goes away (no response), or when the server shuts down (the final
``SubscriptionsListenResult`` carrying the same subscriptionId).

In the modern era ``notifications/tools/list_changed`` is never sent anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.protocol import (
    SUBSCRIPTION_ID_KEY,
    Call,
    Deferred,
    Emit,
    Era,
    Method,
    MethodResult,
    notification_message,
)
from toolkeeper.protocol.faults import invalid_params
from toolkeeper.server.changes import TOOLS_LIST_CHANGED, ChangeHub

__all__ = ["ACKNOWLEDGED", "HONORED_FILTERS", "listen_method", "read_filter"]

ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"

HONORED_FILTERS: Final[Mapping[str, str]] = MappingProxyType({
    "toolsListChanged": TOOLS_LIST_CHANGED,
})
"""Filter key -> the notification it opts in to, for every list the gateway serves."""

_BOOLEAN_FILTERS: Final = ("promptsListChanged", "resourcesListChanged", "toolsListChanged")
_STRING_LIST_FILTERS: Final = ("resourceSubscriptions", "taskIds")


def read_filter(params: Mapping[str, Any]) -> dict[str, bool]:
    """The honored subset of ``params.notifications`` (-32602 when it is malformed)."""
    requested = params.get("notifications")
    if not isinstance(requested, dict):
        raise invalid_params("subscriptions/listen: notifications must be an object",
                             {"path": "$.params.notifications"})
    for key in _BOOLEAN_FILTERS:
        if key in requested and not isinstance(requested[key], bool):
            raise invalid_params(f"subscriptions/listen: notifications.{key} must be a boolean",
                                 {"path": f"$.params.notifications.{key}"})
    for key in _STRING_LIST_FILTERS:
        value = requested.get(key)
        if key in requested and not (isinstance(value, list)
                                     and all(isinstance(v, str) for v in value)):
            raise invalid_params(
                f"subscriptions/listen: notifications.{key} must be an array of strings",
                {"path": f"$.params.notifications.{key}"})
    return {key: True for key in sorted(HONORED_FILTERS) if requested.get(key) is True}


def _listen(hub: ChangeHub, call: Call) -> MethodResult:
    honored = read_filter(call.params)
    hub.check_capacity()  # refuse at once (a JSON error) rather than on the stream
    wanted = frozenset(HONORED_FILTERS[key] for key in honored)
    tag = {SUBSCRIPTION_ID_KEY: call.request_id}

    async def run(emit: Emit) -> dict[str, Any]:
        stream = hub.open()  # before the acknowledgement: no change can fall in between
        try:
            await emit(notification_message(ACKNOWLEDGED,
                                            {"notifications": honored, "_meta": dict(tag)}))
            while (batch := await stream.next()) is not None:
                for method in batch:
                    if method in wanted:
                        await emit(notification_message(method, {"_meta": dict(tag)}))
        finally:
            stream.close()
        return {"_meta": dict(tag)}

    return Deferred(run, stream=True)


def listen_method(hub: ChangeHub) -> Method:
    """The ``subscriptions/listen`` row of the method table (modern era only)."""
    def listen(call: Call) -> MethodResult:
        return _listen(hub, call)

    return Method("subscriptions/listen", listen, frozenset({Era.MODERN}))
