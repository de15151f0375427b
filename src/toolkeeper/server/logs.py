"""The gateway's log output: one handler, and every line redacted before it is written.

:class:`RedactingFormatter` formats a record as usual (message, exception traceback, stack)
and passes the whole text through :func:`~toolkeeper.contracts.redaction.redact_text`, the
same redaction the call log's digest uses (STYLE: one redaction). A handler's exception
message, a traceback's text and uvicorn's access line (its query string) are all part of that
text. :func:`configure_logging` installs it on the root logger; uvicorn is run without a
logging configuration of its own (``log_config=None``), so its error and access loggers
propagate there too, as Python's warnings do (``py.warnings``).
``configure_logging(..., log_format="json")`` writes one JSON object a line instead
(:class:`JsonFormatter`: ``time``, ``level``, ``logger``, ``message``, ``exc``), each text field
through the same redaction.

uvicorn's access lines (``uvicorn.access``, at INFO) pass through :class:`AccessFilter`
(``logging.access``): ``all`` keeps every line, ``errors`` (the default) only those of an answer
with status 400 or above, ``off`` none. A successful request is already counted by the call log
and ``toolkeeper_http_responses_total``; a line for each would only repeat them. Under
``serve``'s runner the same choice is made before a record exists
(:mod:`toolkeeper.transports.access_lines`), so a quiet line costs nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final, TextIO

from toolkeeper.contracts.redaction import redact_text
from toolkeeper.transports.access_lines import ACCESS_MODES, quiet

__all__ = ["ACCESS_MODES", "LOG_FORMAT", "AccessFilter", "JsonFormatter", "RedactingFormatter",
           "configure_logging"]

LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """A formatter whose every output line has been redacted."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``
    and ``exc`` (the traceback and stack text, or null), each text redacted."""

    def format(self, record: logging.LogRecord) -> str:
        exc = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        parts = [part for part in (record.exc_text,
                                   record.stack_info and self.formatStack(record.stack_info))
                 if part]
        if parts:
            exc = redact_text("\n".join(parts))
        return json.dumps({
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact_text(record.getMessage()),
            "exc": exc,
        }, ensure_ascii=False)


_FORMATTERS: Final[dict[str, Callable[[], logging.Formatter]]] = {
    "text": lambda: RedactingFormatter(LOG_FORMAT),
    "json": JsonFormatter,
}
"""``logging.format`` (``--log-format``) to the formatter of each line."""


_ACCESS_LOGGER: Final = "uvicorn.access"


class AccessFilter(logging.Filter):
    """Keeps the access lines ``mode`` asks for (one of :data:`ACCESS_MODES`). ``errors``
    reads the status from uvicorn's record arguments; a record of another shape is kept."""

    def __init__(self, mode: str) -> None:
        if mode not in ACCESS_MODES:
            raise ValueError(f"access log mode must be one of {ACCESS_MODES}, not {mode!r}")
        super().__init__()
        self.mode = mode

    def filter(self, record: logging.LogRecord) -> bool:
        if self.mode == "all":
            return True
        if self.mode == "off":
            return False
        return not quiet(record.args)


_SERVER_LOGGERS = ("uvicorn", "uvicorn.error", _ACCESS_LOGGER)
"""uvicorn's loggers: they must reach the root handler (``log_config=None`` in the runner)."""

_CLIENT_LIBRARIES = ("httpx", "httpcore")
"""HTTP client libraries that log a line per request at INFO (``HTTP Request: POST ...``):
held at WARNING, so a forwarded call or a JWKS read does not write a log line each."""


def configure_logging(level: str, stream: TextIO, *, log_format: str = "text",
                      access: str = "errors") -> None:
    """Log to ``stream`` at ``level`` (a name such as ``info``) through a redacting formatter
    (``log_format`` ``text`` or ``json``), unless the root logger is already configured (as
    :func:`logging.basicConfig`); and send Python's warnings to the ``py.warnings`` logger, so
    that they are redacted too (a warning's message can quote a value as well as an
    exception's can). ``access``: which access lines are kept (:class:`AccessFilter`)."""
    keep = AccessFilter(access)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_FORMATTERS[log_format]())
    logging.basicConfig(level=level.upper(), handlers=[handler])
    logging.captureWarnings(True)
    for name in _SERVER_LOGGERS:  # a server started earlier in the process may have given
        logger = logging.getLogger(name)  # them handlers of their own that bypass redaction
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
        logger.disabled = False
    for name in _CLIENT_LIBRARIES:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    access_logger = logging.getLogger(_ACCESS_LOGGER)
    for old in [f for f in access_logger.filters if isinstance(f, AccessFilter)]:
        access_logger.removeFilter(old)
    if keep.mode != "all":  # "all" keeps every line: no filter to call per request
        access_logger.addFilter(keep)
