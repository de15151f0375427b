"""The 401 answer: its log line names the refusal's reason and survives the log redaction in
both formats (a line that redaction mangles tells the operator nothing)."""

from __future__ import annotations

import json
import logging

import pytest

from toolkeeper.contracts.redaction import REDACTED
from toolkeeper.errors import AuthenticationError
from toolkeeper.protocol.challenge import unauthorized_reply
from toolkeeper.server.logs import LOG_FORMAT, JsonFormatter, RedactingFormatter


@pytest.mark.parametrize("reason", ["missing", "malformed", "expired", "unknown_key",
                                    "bad_signature", "revoked"])
def test_the_refusal_log_line_keeps_its_reason_through_redaction(
        caplog: pytest.LogCaptureFixture, reason: str) -> None:
    with caplog.at_level(logging.INFO, logger="toolkeeper.auth"):
        reply = unauthorized_reply(AuthenticationError(reason, challenge="Bearer"))
    assert reply.status == 401
    [record] = [r for r in caplog.records if r.name.startswith("toolkeeper.auth")]
    text = RedactingFormatter(LOG_FORMAT).format(record)
    message = json.loads(JsonFormatter().format(record))["message"]
    for line in (text, message):
        assert REDACTED not in line
        assert reason in line and "refused" in line
