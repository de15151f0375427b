"""uvicorn's access lines, kept by ``logging.access`` (``all``, ``errors`` or ``off``).

uvicorn makes one log record per response on ``uvicorn.access`` at INFO, with the arguments
``(client, method, path, http version, status)``. A filter that drops the record afterwards
still pays for it: the record, its caller's frame and the clock, about 650 bytecodes a request.
So under ``errors`` the runner's protocol classes hand their requests :class:`ErrorLines` in
place of the logger, which makes a record only for a status of 400 or more, and under ``off``
uvicorn's access log is not enabled at all. ``server.logs.AccessFilter`` keeps the same lines
(:func:`quiet`) on the root handler for a server started some other way.
"""

from __future__ import annotations

import logging
from typing import Any, Final

__all__ = ["ACCESS_MODES", "ErrorLines", "quiet"]

ACCESS_MODES: Final = ("all", "errors", "off")
"""The values of ``logging.access``."""

_STATUS_ARG: Final = 4  # uvicorn's access record: (client, method, path, http version, status)


def quiet(args: object) -> bool:
    """Whether an access record with these arguments is one ``errors`` drops: uvicorn's shape
    with a status below 400 (a record of another shape is kept)."""
    if isinstance(args, tuple) and len(args) > _STATUS_ARG:
        status = args[_STATUS_ARG]
        return type(status) is int and status < 400
    return False


class ErrorLines:
    """What uvicorn's request cycle calls as its access logger under ``errors``: the lines of
    a status of 400 or more reach ``logger``, as if uvicorn had logged them itself."""

    __slots__ = ("_logger",)

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def info(self, message: str, *args: Any) -> None:
        # quiet(args), inline: this runs once a request
        if len(args) > _STATUS_ARG and type(status := args[_STATUS_ARG]) is int and status < 400:
            return
        self._logger.info(message, *args, stacklevel=2)
