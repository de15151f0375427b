"""What a ``tools/call`` answers besides its handler's own result, and how the runner reads a
handler's end: the result for invalid arguments, the generic failure result, the output-schema
breach, a cancellation told apart from a handler's own ``CancelledError``, and the reason a
refused call is counted under (:mod:`toolkeeper.server.calls` uses them)."""

from __future__ import annotations

import asyncio

from toolkeeper.contracts.validate import Issue
from toolkeeper.errors import JsonRpcError
from toolkeeper.server.content import ToolResult, text

__all__ = [
    "InvalidOutputError",
    "cancel_requested",
    "failure_result",
    "invalid_arguments_result",
    "refusal_reason",
    "thrown_in",
]


def invalid_arguments_result(issues: list[Issue]) -> ToolResult:
    """The isError result for arguments that fail validation (sorted, one line per error)."""
    errors = [issue.to_dict() for issue in issues]
    lines = "\n".join(f"{i.path}: {i.message} [{i.keyword}]" for i in issues)
    return ToolResult((text(f"Invalid arguments ({len(issues)} error"
                            f"{'s' if len(issues) != 1 else ''}):\n{lines}"),),
                      {"errors": errors}, is_error=True)


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
