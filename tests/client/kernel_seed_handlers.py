"""Handlers for the kernel's live seed-003 test, loaded by ``toolkeeper serve --handlers
this_file.py:handlers``: the demo's ``db.query`` handlers (one per version), each appending
``{"version", "arguments"}`` as a JSON line to the file named by ``KERNEL_HANDLER_LOG`` before
it answers, so the test can prove which contract every executed call ran under."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from toolkeeper.demo.handlers import db_query_v3, db_query_v4
from toolkeeper.server import ToolHandlers

__all__ = ["LOG_ENV", "handlers"]

LOG_ENV = "KERNEL_HANDLER_LOG"


def _recorded(version: str, run: Callable[[dict[str, Any]], dict[str, Any]]
              ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
            log.write(json.dumps({"version": version, "arguments": arguments}) + "\n")
        return run(arguments)

    return handler


def handlers() -> ToolHandlers:
    bound = ToolHandlers()
    bound.bind("db.query", _recorded("3.0.0", db_query_v3), version="3.0.0")
    bound.bind("db.query", _recorded("4.0.0", db_query_v4), version="4.0.0")
    return bound
