"""The gateway's log output: one handler, and every line redacted before it is written.

:class:`RedactingFormatter` formats a record as usual (message, exception traceback, stack)
and passes the whole text through :func:`~toolkeeper.contracts.redaction.redact_text`, the
same redaction the call log's digest uses (STYLE: one redaction). A handler's exception
message, a traceback's text and uvicorn's access line (its query string) are all part of that
text. :func:`configure_logging` installs it on the root logger; uvicorn is run without a
logging configuration of its own (``log_config=None``), so its error and access loggers
propagate there too, as Python's warnings do (``py.warnings``).
"""

from __future__ import annotations

import logging
from typing import Final, TextIO

from toolkeeper.contracts.redaction import redact_text

__all__ = ["LOG_FORMAT", "RedactingFormatter", "configure_logging"]

LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """A formatter whose every output line has been redacted."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


_SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
"""uvicorn's loggers: they must reach the root handler (``log_config=None`` in the runner)."""


def configure_logging(level: str, stream: TextIO) -> None:
    """Log to ``stream`` at ``level`` (a name such as ``info``) through a redacting formatter,
    unless the root logger is already configured (as :func:`logging.basicConfig`); and send
    Python's warnings to the ``py.warnings`` logger, so that they are redacted too (a warning's
    message can quote a value as well as an exception's can)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(RedactingFormatter(LOG_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    logging.captureWarnings(True)
    for name in _SERVER_LOGGERS:  # a server started earlier in the process may have given
        logger = logging.getLogger(name)  # them handlers of their own that bypass redaction
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
        logger.disabled = False
