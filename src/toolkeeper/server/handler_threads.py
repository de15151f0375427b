"""Plain ``def`` handlers run in a worker thread (:mod:`~toolkeeper.server.calls`): the run, an
awaitable it returns awaited back on the event loop, and a ``BaseException`` it raises carried
back as the handler's failure instead of ending the loop."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from types import CoroutineType
from typing import Any

from toolkeeper.server.content import ToolResult

__all__ = ["threaded"]

# What a handler returns that is certainly not awaitable (skips the Awaitable ABC check).
_PLAIN = (ToolResult, str, dict, list, tuple, type(None))


class _RaisedInThread(Exception):
    """A threaded handler raised a BaseException that is not an Exception (SystemExit,
    KeyboardInterrupt): carried back as an Exception, since asyncio lets those end the event
    loop when a task awaits them. The handler's failure, like any exception it raises."""


def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    try:
        return function(*args)
    except Exception:
        raise
    except BaseException as exc:
        raise _RaisedInThread(type(exc).__name__) from exc


async def threaded(function: Callable[..., Any], *args: Any) -> Any:
    """A plain function's run in a worker thread; an awaitable it returns is awaited here, on
    the event loop, as an inline function's would be."""
    value = await asyncio.to_thread(_in_thread, function, *args)
    if type(value) is CoroutineType or (
            not isinstance(value, _PLAIN) and inspect.isawaitable(value)):
        value = await value
    return value
