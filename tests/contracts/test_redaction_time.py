"""Redaction runs in time linear in its input (SPEC 5.6; it runs on the event loop for every
log line and in the call path for every argument): text built to make a secret-shape search
start over and over (``eyJa`` repeated, ``BEGIN `` repeated, ``a=`` repeated...) costs no more
per character than ordinary text, through both :func:`redact_text` and the call log's
:func:`arguments_digest`.

Python's regular expression engine counts no steps, so the tests measure time, as the CPU time
of this thread (other processes on the machine do not count) and the best of five runs. The
property is linearity, so the main assertion is a ratio: four times the input takes less than
eight times as long (a quadratic search takes sixteen); the absolute bound on the largest input
is generous (several times what the costliest linear pass takes) and only catches a search that
went quadratic at every size."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from toolkeeper.contracts.redaction import redact_text
from toolkeeper.server.calllog import arguments_digest

SIZE = 200_000
"""Characters in the largest input; the ratio compares it with a quarter of it."""
BOUND = 2.0
"""Seconds of CPU time the largest input may take (a linear pass takes milliseconds to about
a third of a second for the costliest prefix; a quadratic one, far longer)."""

PREFIXES = (
    # secret shapes: each repeated so that every repetition is a place a search could start
    "eyJa", "eyJa-", "eyJaaaa.", "BEGIN ", "-----BEGIN ", "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY", "Bearer ", "bearer ", "Bearer\t", "Basic ", "Basic YWRh",
    "sk_live_", "sk-", "rk_test_", "whsec_", "ghp_", "github_pat_", "xoxb-", "AKIA", "AIza",
    "npm_", "tk_", "tk_0123456789ab_", "tk_0123456789ab_a", "tk_0123456789ab_" + "a" * 42 + " ",
    "://a:", "a://a:", "a://a:b@", "?token=", "&a=", "#a=", "?a",
    # names and values in text
    "password=", "password='", 'password="', "password=[", "password=(", "password=a;",
    "Authorization: Bearer ", 'Authorization: Digest a="', "Authorization: Digest a=b,",
    "a=", "a:", "a: ", "a=[", "a=(", "a='", "token=a;", "'a': ", '"a": ', "(b'a', ",
    "[b'a', ", "api key: ", "a b ", "a\t", " ", "%", "?", "a?", "a.", "a-",
)


def _cpu_seconds(function: Callable[[str], object], text: str) -> float:
    """The best of five runs, in CPU seconds of this thread (the best: another process can only
    add to a run's time, through the caches it shares)."""
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        function(text)
        best = min(best, time.thread_time() - start)
    return best


def _digest(text: str) -> object:
    return arguments_digest({"q": text})


def _adversarial(prefix: str, size: int) -> str:
    return (prefix * (size // len(prefix) + 1))[:size]


@pytest.mark.parametrize("function", [redact_text, _digest], ids=["redact_text", "digest"])
@pytest.mark.parametrize("prefix", PREFIXES)
def test_adversarial_text_is_redacted_in_linear_time(
        prefix: str, function: Callable[[str], object]) -> None:
    small = _cpu_seconds(function, _adversarial(prefix, SIZE // 4))
    large = _cpu_seconds(function, _adversarial(prefix, SIZE))
    assert large < BOUND
    # below two milliseconds the timer's noise is most of the figure: compare from there up
    assert large < 8 * max(small, 0.002)
