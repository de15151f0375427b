"""The gateway's log formatter: a record's message, its exception traceback, its stack and
uvicorn's access line (a query string) are redacted before they are written."""

from __future__ import annotations

import io
import logging
import sys
import warnings
from collections.abc import Callable, Iterator

import pytest

from toolkeeper.contracts.redaction import REDACTED
from toolkeeper.server.logs import LOG_FORMAT, AccessFilter, RedactingFormatter, configure_logging

SECRET = "hunter2-Qx81vLm"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEiLCJuIjoxfQ.Qm9vbXNlY3JldHNpZ25hdHVyZTE"


def _record(msg: str, *args: object, name: str = "toolkeeper.server",
            exc_info: bool = False, stack: str | None = None) -> logging.LogRecord:
    record = logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args,
                               sys.exc_info() if exc_info else None)
    record.stack_info = stack
    return record


def test_a_message_and_its_arguments_are_redacted() -> None:
    line = RedactingFormatter(LOG_FORMAT).format(
        _record("login with %s failed for %r", f"password={SECRET}", {"token": JWT}))
    assert SECRET not in line and JWT not in line
    assert line.count(REDACTED) == 2


def test_an_exception_traceback_and_a_stack_are_redacted() -> None:
    try:
        raise ValueError(f"bad arguments {{'db_password': '{SECRET}'}}")
    except ValueError:
        record = _record("tool %s raised", "boom", exc_info=True, stack=f"Stack: {JWT}")
    line = RedactingFormatter(LOG_FORMAT).format(record)
    assert "Traceback" in line and "ValueError: bad arguments" in line
    assert SECRET not in line and JWT not in line


def test_an_access_line_keeps_its_path_and_masks_every_query_value() -> None:
    line = RedactingFormatter("%(message)s").format(_record(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "POST",
        f"/mcp?access_token={SECRET}&page=2", "1.1", 200, name="uvicorn.access"))
    assert line == f'127.0.0.1:5000 - "POST /mcp?access_token={REDACTED}&page={REDACTED} ' \
                   'HTTP/1.1" 200'


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], logging.Logger]]:
    """Sets the root logger's handlers aside (pytest's own capture handlers, which it adds
    when the test body starts, so call it there) and its level; afterwards undoes what
    :func:`configure_logging` changed besides."""

    def bare() -> logging.Logger:
        root = logging.getLogger()
        monkeypatch.setattr(root, "handlers", [])
        monkeypatch.setattr(root, "level", root.level)
        return root

    yield bare
    logging.captureWarnings(False)
    access = logging.getLogger("uvicorn.access")
    for installed in [f for f in access.filters if isinstance(f, AccessFilter)]:
        access.removeFilter(installed)


def test_configure_logging_sends_every_logger_through_the_redacting_formatter(
        root: Callable[[], logging.Logger]) -> None:
    logger = root()
    out = io.StringIO()
    configure_logging("info", out)
    assert logger.level == logging.INFO
    assert [type(h.formatter) for h in logger.handlers] == [RedactingFormatter]
    logging.getLogger("uvicorn.access").info("%s", f"GET /x?sig={SECRET}")
    assert SECRET not in out.getvalue() and f"GET /x?sig={REDACTED}" in out.getvalue()


def test_configure_logging_sends_python_warnings_through_the_redacting_formatter(
        root: Callable[[], logging.Logger]) -> None:
    root()
    out = io.StringIO()
    with warnings.catch_warnings():  # (the suite turns warnings into errors)
        warnings.simplefilter("always")
        configure_logging("info", out)
        warnings.warn(f"retrying with password={SECRET}", UserWarning, stacklevel=1)
    assert "py.warnings" in out.getvalue() and "UserWarning" in out.getvalue()
    assert SECRET not in out.getvalue() and f"password={REDACTED}" in out.getvalue()


def _access(status: int) -> logging.LogRecord:
    return logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                             ("127.0.0.1:5000", "POST", "/mcp", "1.1", status), None)


@pytest.mark.parametrize(("mode", "kept"), [
    ("all", [200, 204, 302, 400, 404, 503]),
    ("errors", [400, 404, 503]),
    ("off", []),
])
def test_the_access_filter_keeps_the_statuses_its_mode_names(mode: str, kept: list[int]) -> None:
    keep = AccessFilter(mode)
    assert [s for s in (200, 204, 302, 400, 404, 503) if keep.filter(_access(s))] == kept


def test_an_unknown_access_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="access log mode"):
        AccessFilter("some")


def test_configure_logging_installs_one_access_filter_however_often_it_runs(
        root: Callable[[], logging.Logger]) -> None:
    root()
    out = io.StringIO()
    configure_logging("info", out, access="off")
    configure_logging("info", out, access="errors")
    access = logging.getLogger("uvicorn.access")
    assert [f.mode for f in access.filters if isinstance(f, AccessFilter)] == ["errors"]
    access.handle(_access(200))
    access.handle(_access(500))
    lines = [line for line in out.getvalue().splitlines() if "uvicorn.access" in line]
    assert [line.rsplit(" ", 1)[1] for line in lines] == ["500"]


def test_configure_logging_with_every_access_line_installs_no_filter(
        root: Callable[[], logging.Logger]) -> None:
    root()
    out = io.StringIO()
    configure_logging("info", out, access="errors")
    configure_logging("info", out, access="all")
    assert [f for f in logging.getLogger("uvicorn.access").filters
            if isinstance(f, AccessFilter)] == []
    logging.getLogger("uvicorn.access").handle(_access(200))
    assert out.getvalue().rstrip().endswith('"POST /mcp HTTP/1.1" 200')


@pytest.mark.parametrize(("level", "kept"), [("info", logging.WARNING), ("debug", logging.WARNING),
                                             ("error", logging.ERROR)])
def test_the_http_client_libraries_log_no_line_per_request(
        root: Callable[[], logging.Logger], level: str, kept: int) -> None:
    root()
    out = io.StringIO()
    try:
        configure_logging(level, out)
        logging.getLogger("httpx").info("HTTP Request: POST http://127.0.0.1:9/mcp \"200 OK\"")
        assert out.getvalue() == ""
        assert [logging.getLogger(name).level for name in ("httpx", "httpcore")] == [kept, kept]
    finally:
        for name in ("httpx", "httpcore"):
            logging.getLogger(name).setLevel(logging.NOTSET)
