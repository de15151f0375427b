"""``--log-format json``: one JSON object a line (time, level, logger, message, exc), every
text field through the same redaction as the text lines."""

from __future__ import annotations

import io
import json
import logging
import sys

from toolkeeper.contracts.redaction import REDACTED
from toolkeeper.server.logs import JsonFormatter

SECRET = "hunter2-Qx81vLm"


def _record(msg: str, *args: object, exc_info: bool = False) -> logging.LogRecord:
    return logging.LogRecord("toolkeeper.server", logging.ERROR, __file__, 1, msg, args,
                             sys.exc_info() if exc_info else None)


def test_a_record_is_one_json_object_with_the_five_fields() -> None:
    line = JsonFormatter().format(_record("served %d calls", 3))
    assert "\n" not in line
    entry = json.loads(line)
    assert sorted(entry) == ["exc", "level", "logger", "message", "time"]
    assert (entry["level"], entry["logger"], entry["message"], entry["exc"]) == (
        "ERROR", "toolkeeper.server", "served 3 calls", None)
    assert entry["time"].endswith("+00:00")


def test_the_message_and_the_traceback_are_redacted() -> None:
    try:
        raise ValueError(f"connect failed: password={SECRET}")
    except ValueError:
        record = _record("login with %s failed", f"password={SECRET}", exc_info=True)
    line = JsonFormatter().format(record)
    assert SECRET not in line
    entry = json.loads(line)
    assert REDACTED in entry["message"]
    assert "Traceback" in entry["exc"] and REDACTED in entry["exc"]


def test_configure_logging_in_json_writes_json_lines() -> None:
    from toolkeeper.server.logs import configure_logging

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers.clear()
    stream = io.StringIO()
    try:
        configure_logging("info", stream, log_format="json")
        logging.getLogger("toolkeeper.test").info("token=%s", SECRET)
    finally:
        root.handlers[:], root.level = saved[0], saved[1]
    entry = json.loads(stream.getvalue())
    assert entry["logger"] == "toolkeeper.test" and SECRET not in entry["message"]
