"""``SseDecoder`` reads event streams as both MCP eras send them, whatever the chunking."""

from __future__ import annotations

import pytest

from toolkeeper.protocol.sse_events import SseDecoder, SseEvent

MODERN = (b'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\r\n\r\n'
          b": ping\r\n\r\n"
          b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n')
EXPECTED = [SseEvent("message", '{"jsonrpc":"2.0","method":"notifications/progress"}', None),
            SseEvent("message", '{"jsonrpc":"2.0","id":1,"result":{}}', None)]


def _feed_all(chunks: list[bytes]) -> list[SseEvent]:
    decoder = SseDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)] + decoder.end()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, len(MODERN)])
def test_events_are_the_same_however_the_stream_is_chunked(size: int) -> None:
    chunks = [MODERN[i:i + size] for i in range(0, len(MODERN), size)]
    assert _feed_all(chunks) == EXPECTED


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_every_line_ending_splits_lines(newline: bytes) -> None:
    stream = MODERN.replace(b"\r\n", newline)
    assert _feed_all([stream]) == EXPECTED


def test_a_cr_at_a_chunk_end_waits_for_a_possible_lf() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r\n") == [SseEvent("message", "a", None)]


def test_the_legacy_priming_event_is_not_dispatched_but_sets_the_id_and_retry() -> None:
    decoder = SseDecoder()
    events = decoder.feed(b"id: 42\r\nretry: 1500\r\ndata: \r\n\r\n"
                          b'event: message\r\ndata: {"x":1}\r\n\r\n')
    assert events == [SseEvent("message", '{"x":1}', "42")]
    assert decoder.retry_ms == 1500


def test_data_lines_join_with_lf_and_other_event_types_keep_their_name() -> None:
    events = _feed_all([b"event: other\ndata: a\ndata: b\n\n"])
    assert events == [SseEvent("other", "a\nb", None)]


def test_a_stream_ending_in_a_bare_cr_dispatches_its_last_event_at_the_end() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r\r") == []
    assert decoder.end() == [SseEvent("message", "a", None)]


def test_an_unfinished_event_is_not_dispatched() -> None:
    assert _feed_all([b"event: message\r\ndata: {}\r\n"]) == []
