"""The handlers the rollout tests serve: ``pay`` 1.0.0, the target, always answers; 2.0.0, the
candidate, fails every call whose ``a`` is a multiple of ``fail_every`` (None: never)."""

from __future__ import annotations

from typing import Any

from toolkeeper.server import ToolHandlers

__all__ = ["canary_handlers"]


def canary_handlers(fail_every: int | None) -> ToolHandlers:
    def candidate(arguments: dict[str, Any]) -> dict[str, Any]:
        if fail_every is not None and arguments["a"] % fail_every == 0:
            raise RuntimeError("the candidate's defect")
        return {"ran": "2.0.0"}

    out = ToolHandlers()
    out.bind("pay", lambda arguments: {"ran": "1.0.0"}, version="1.0.0", inline=True)
    out.bind("pay", candidate, version="2.0.0", inline=True)
    return out
