"""What a ``tools/call`` answers besides its handler's own result, and how the runner reads a
handler's end: the result for invalid arguments, the generic failure result, the output-schema
breach (and the check that finds it), a cancellation told apart from a handler's own
``CancelledError``, and the reason a refused call is counted under
(:mod:`toolkeeper.server.calls` uses them)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.contracts.validate import CompiledSchema, Issue
from toolkeeper.errors import AskError, CapabilityRequiredError, JsonRpcError
from toolkeeper.server.calllog import CallLog
from toolkeeper.server.content import ForwardedError, ToolResult, text
from toolkeeper.server.limits import CallTimeoutError, timed_out_result

__all__ = [
    "DEFAULT_MAX_REPORTED_ERRORS",
    "InvalidOutputError",
    "cancel_requested",
    "checked_output",
    "collection_bound",
    "failure_result",
    "handler_failed",
    "invalid_arguments_result",
    "refusal_reason",
    "thrown_in",
]


_log = logging.getLogger("toolkeeper.server")

DEFAULT_MAX_REPORTED_ERRORS: Final = 50
"""Errors an invalid-arguments result lists at most (``server.max_reported_errors``)."""

_COLLECTED_MIN: Final = 1000
_COLLECTED_PER_LISTED: Final = 20
# The values of the arguments checked for errors at most (collection_bound): enough to list
# the first errors of any request an agent means, few enough that building them is cheap
# (jsonschema-rs builds every error of what it checks; a message naming a long enum costs it
# tens of microseconds).
_MESSAGE_CHARS: Final = 1024
# A listed message is cut to this many characters ("..." at the end): one naming a long enum
# ("must be one of [...]") would otherwise fill the byte bound alone.
_LISTED_BYTES: Final = 32768
# The encoded errors one result lists, whatever the count bound: the bound on the answer's size
# however long the paths (an extra property's name is its path) or messages are.
_SUMMARY_ERRORS: Final = 5
_SUMMARY_CHARS: Final = 120
# The text summary names the first few errors, each path and message cut to a fixed length: a
# client that shows only text (2024-11-05, 2025-03-26: no structuredContent) still sees them.


def collection_bound(max_reported: int = DEFAULT_MAX_REPORTED_ERRORS) -> int:
    """How many of a call's argument values are checked for errors at most, for a result that
    lists ``max_reported`` (``server.max_reported_errors``): the larger of 1,000 and 20 times
    it (:meth:`~toolkeeper.contracts.validate.CompiledSchema.bounded_errors`)."""
    return max(_COLLECTED_MIN, _COLLECTED_PER_LISTED * max_reported)


def invalid_arguments_result(issues: Sequence[Issue],
                             limit: int = DEFAULT_MAX_REPORTED_ERRORS, *,
                             truncated: bool = False) -> ToolResult:
    """The isError result for arguments that fail validation. ``issues`` come sorted (path,
    message); ``structuredContent.errors`` lists the first of them, at most ``limit`` and
    :data:`_LISTED_BYTES` of JSON (a prefix: the same errors every time; each message cut to
    :data:`_MESSAGE_CHARS`), and ``structuredContent.omitted`` counts the rest (absent when
    none is left out). ``truncated`` (the arguments held more values than were checked: more
    errors may exist) adds ``"truncated": true``, and ``omitted`` is then a lower bound. One
    text block summarises: the counts and the first :data:`_SUMMARY_ERRORS` errors, shortened.
    Each error is listed once, so the answer is bounded whatever the request holds."""
    listed: list[dict[str, str]] = []
    used = 0
    for issue in issues[:limit]:
        entry = issue.to_dict()
        entry["message"] = _cut_text(entry["message"], _MESSAGE_CHARS)
        used += len(msgspec.json.encode(entry)) + 1
        if used > _LISTED_BYTES:
            break
        listed.append(entry)
    omitted = len(issues) - len(listed)
    structured: dict[str, Any] = {"errors": listed}
    if omitted:
        structured["omitted"] = omitted
    if truncated:
        structured["truncated"] = True
    return ToolResult((text(_summary(issues, len(listed), omitted, truncated)),), structured,
                      is_error=True)


def _cut_text(value: str, chars: int) -> str:
    return value if len(value) <= chars else value[:chars - 3] + "..."


def _short(value: str) -> str:
    return _cut_text(value, _SUMMARY_CHARS)


def _summary(issues: Sequence[Issue], listed: int, omitted: int, truncated: bool) -> str:
    count = len(issues)
    head = f"Invalid arguments ({count} error{'s' if count != 1 else ''}"
    if truncated:
        head += " in the values checked, the rest not checked"
    head += f"; {listed} listed, {omitted} omitted):" if omitted else "):"
    lines = [head, *(f"{_short(i.path)}: {_short(i.message)} [{_short(i.keyword)}]"
                     for i in issues[:_SUMMARY_ERRORS])]
    if count > _SUMMARY_ERRORS:
        lines.append(f"... {count - _SUMMARY_ERRORS} more")
    return "\n".join(lines)


class InvalidOutputError(Exception):
    """A result whose structured content breaks (or lacks) the contract's output schema."""


def thrown_in(exc: BaseException) -> bool:
    """Whether ``exc`` was raised at the await that caught it rather than inside the handler:
    its traceback has no frame below the catching one (how ``coroutine.close()`` throws
    GeneratorExit into a call that awaits its handler)."""
    trace = exc.__traceback__
    return trace is None or trace.tb_next is None


def cancel_requested() -> bool:
    """Whether the running task is being cancelled (False outside a task)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    return task is not None and task.cancelling() > 0


def refusal_reason(exc: JsonRpcError) -> str:
    """Why a call was refused before dispatch: the gate's ``reason``, else an unknown (or
    invisible) tool, or params that are not a call (a JSON path names the bad field)."""
    data = exc.rpc_data if isinstance(exc.rpc_data, dict) else {}
    reason = data.get("reason")
    if isinstance(reason, str):
        return reason
    return "invalid_params" if "path" in data else "unknown_tool"


def failure_result(name: str) -> ToolResult:
    """The generic isError result of a handler that failed (SPEC 3.4.5: no detail sent)."""
    return ToolResult((text(f"Tool {name!r} failed while running; no details are available "
                            "to the caller."),), is_error=True)


def checked_output(spec: ToolSpec, output: CompiledSchema, result: ToolResult) -> ToolResult:
    """A successful result's structured content must honour the output schema (else
    InvalidOutputError, logged here: the handler's failure, logged ``invalid_output``)."""
    if result.is_error:
        return result
    if not result.has_structured:
        _log.error("tool %s %s returned no structured content for its output schema",
                   spec.name, spec.version)
        raise InvalidOutputError
    issues = output.errors(result.structured)
    if issues:
        _log.error("tool %s %s returned structured content that breaks its output schema: "
                   "%s", spec.name, spec.version, [i.to_dict() for i in issues])
        raise InvalidOutputError
    return result


def handler_failed(log: CallLog, spec: ToolSpec, handle: int, started: float,
                   exc: BaseException) -> ToolResult:
    """Complete the call log (``log``, the call at ``handle``, ``started`` at that
    ``time.perf_counter()``) for a handler that raised (called while ``exc`` is being
    handled). Two kinds propagate: a protocol error a handler may raise (a
    CapabilityRequiredError, through its context; a ForwardedError, an upstream's answer)
    and the call's own end, a CancelledError while its task is being cancelled or a
    GeneratorExit thrown in by its coroutine's close. Anything else a handler raises is the
    generic failure result (SPEC 3.4.5): every Exception, JsonRpcError included, a
    CancelledError nobody asked for, and the BaseExceptions that would otherwise end the
    server (SystemExit, KeyboardInterrupt, a GeneratorExit of the handler's own)."""
    if isinstance(exc, (CapabilityRequiredError, ForwardedError)):
        outcome = "protocol_error"
    elif isinstance(exc, InvalidOutputError):
        outcome = "invalid_output"  # told in the log already, without a traceback
    elif isinstance(exc, CallTimeoutError):
        log.completed(handle, "timeout", (time.perf_counter() - started) * 1000.0)
        _log.warning("tool %s %s timed out after %g s and was cancelled", spec.name,
                     spec.version, exc.timeout_s)
        return timed_out_result(spec.name, exc.timeout_s)
    elif ((isinstance(exc, asyncio.CancelledError) and cancel_requested())
          or (isinstance(exc, GeneratorExit) and thrown_in(exc))):
        outcome = "cancelled"
    elif isinstance(exc, AskError):
        # The client's answer (or its absence), not the handler's fault: one line with the
        # stable code, the traceback only when debugging.
        outcome = "exception"
        _log.warning("tool %s %s: an ask the handler did not catch got no result (%s)",
                     spec.name, spec.version, exc.code)
        _log.debug("tool %s %s: the uncaught ask", spec.name, spec.version, exc_info=exc)
    else:
        outcome = "exception"
        _log.exception("tool %s %s raised", spec.name, spec.version)
    log.completed(handle, outcome, (time.perf_counter() - started) * 1000.0)
    if outcome in ("protocol_error", "cancelled"):
        raise exc
    return failure_result(spec.name)
