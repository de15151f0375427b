"""Redaction keeps what proves the path and follows one personal-data policy: MCP's
``progressToken`` is a correlation id, not a secret; the values of personal-data keys
(``query``, ``email``, ...) are kept, hashed or masked by the configured policy, in JSON
values (evidence, the call log's digest) and in log text alike."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from toolkeeper.config.loader import parse_config
from toolkeeper.conformance.evidence import redact_value
from toolkeeper.contracts.redaction import (
    PERSONAL,
    personal_data_policy,
    redact,
    redact_text,
    set_personal_data_policy,
)
from toolkeeper.errors import ToolkeeperError
from toolkeeper.server.logs import JsonFormatter, RedactingFormatter

HASHED_ADA = "[HASHED sha256:982c2f9e71df3545]"  # sha256 of the canonical JSON "ada"


@pytest.fixture
def policy() -> Iterator[None]:
    previous = personal_data_policy()
    yield
    set_personal_data_policy(previous.mode, sorted(previous.keys))


def test_a_progress_token_is_kept_and_a_token_is_still_redacted() -> None:
    value = {"params": {"_meta": {"progressToken": "p-7"}, "token": "s3cret"}}
    redacted, evidence = redact(value)
    assert redacted["params"]["_meta"]["progressToken"] == "p-7"
    assert evidence == [("$.params.token", "key.denylist")]
    assert redact_text('"progressToken": "p-7", "token": "s3cret"') == \
        '"progressToken": "p-7", "token": "[REDACTED]"'


def test_personal_data_is_kept_by_default(policy: None) -> None:
    assert personal_data_policy().mode == "keep"
    assert redact({"query": "ada"}) == ({"query": "ada"}, [])
    assert redact_text("query=ada") == "query=ada"


def test_the_hash_policy_hashes_personal_values_in_values_and_text_alike(policy: None) -> None:
    set_personal_data_policy("hash")
    redacted, evidence = redact({"args": {"Query": "ada", "limit": 3}})
    assert redacted == {"args": {"Query": HASHED_ADA, "limit": 3}}
    assert evidence == [("$.args.Query", "key.personal_hash")]
    assert redact_text('search query=ada "email": "a@b.c"').startswith(
        f"search query={HASHED_ADA} \"email\": \"[HASHED sha256:")
    assert redact_value({"query": "ada"}, "$.body", []) == {"query": HASHED_ADA}


def test_the_mask_policy_masks_only_the_configured_keys(policy: None) -> None:
    set_personal_data_policy("mask", ["customer-name"])
    redacted, evidence = redact({"customer_name": "Ada", "query": "kept", "password": "x"})
    assert redacted == {"customer_name": PERSONAL, "query": "kept", "password": "[REDACTED]"}
    assert sorted(evidence) == [("$.customer_name", "key.personal_mask"),
                                ("$.password", "key.denylist")]


def test_log_lines_follow_the_policy(policy: None) -> None:
    set_personal_data_policy("mask")
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "looked up email=%s", ("a@b.c",),
                               None)
    assert RedactingFormatter("%(message)s").format(record) == f"looked up email={PERSONAL}"
    assert f'"message": "looked up email={PERSONAL}"' in JsonFormatter().format(record)


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="personal-data mode"):
        set_personal_data_policy("shred")


def test_the_policy_is_a_configuration_key_with_checked_choices() -> None:
    config = parse_config('[logging]\npersonal_data = "hash"\npersonal_keys = ["query"]\n')
    assert (config.logging.personal_data, config.logging.personal_keys) == ("hash", ("query",))
    assert parse_config("").logging.personal_data == "keep"
    with pytest.raises(ToolkeeperError) as caught:
        parse_config('[logging]\npersonal_data = "shred"\n')
    assert caught.value.code.startswith("config.")
