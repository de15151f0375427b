"""A case's level is one its cited text carries: on every transport (the case's own level and
each ``levelOn`` entry), a MUST (the case's or a per-code ``levels`` entry's) cites a section
holding MUST, MUST NOT, REQUIRED or SHALL, and a SHOULD one holding SHOULD, RECOMMENDED or a
stronger word; a reference case is free. The keywords count, as BCP 14 says (the spec's
index.mdx), when they appear in all capitals: the text mostly bolds them, not always (the
caching page's "Servers MUST include caching hints")."""

from __future__ import annotations

import re

import pytest
from test_transcript_format import SPEC_ROOT, _sections

from toolkeeper.conformance import builtin_corpus

KEYWORDS = {
    "MUST": re.compile(r"\b(?:MUST|REQUIRED|SHALL)\b"),
    "SHOULD": re.compile(r"\b(?:MUST|REQUIRED|SHALL|SHOULD|RECOMMENDED)\b"),
}
"""A level -> the words of a section that carries it (its own or a stronger one)."""


def _unsupported() -> list[tuple[str, str, str, str, str]]:
    """(case, transport, level, file, section) for every level its section does not carry."""
    found = []
    for transcript in builtin_corpus():
        for transport, judged in (("*", transcript), *(
                (t, transcript.on_transport(t)) for t in sorted(transcript.level_on))):
            cited = judged.citation
            assert cited is not None, transcript.name
            text = _sections(cited.file)[cited.section]
            for level in sorted({judged.level, *judged.levels.values()} & set(KEYWORDS)):
                if KEYWORDS[level].search(text) is None:
                    found.append((transcript.name, transport, level, cited.file,
                                  cited.section))
    return found


def test_every_level_is_carried_by_the_section_it_cites() -> None:
    if not SPEC_ROOT.is_dir():
        pytest.skip(f"the spec text is not at {SPEC_ROOT}")
    assert _unsupported() == []


def test_the_keywords_are_read_in_capitals_only() -> None:
    assert KEYWORDS["MUST"].search("Servers must reply; clients SHOULD retry.") is None
    assert KEYWORDS["MUST"].search("- **MUST NOT** be empty") is not None
    assert KEYWORDS["SHOULD"].search("it is NOT RECOMMENDED to") is not None
    assert KEYWORDS["SHOULD"].search("the server may answer") is None


SENDER_ONLY_OVER_HTTP = ("negative-batch-request", "negative-legacy-batch-request")
"""Cases whose HTTP text binds only the client (one JSON-RPC message a POST), with no
answer set for the server: a reference case, citing the client's duty."""


def test_a_batch_over_http_is_a_reference_case_citing_the_clients_single_message_duty(
        ) -> None:
    if not SPEC_ROOT.is_dir():
        pytest.skip(f"the spec text is not at {SPEC_ROOT}")
    corpus = {t.name: t for t in builtin_corpus()}
    for name in SENDER_ONLY_OVER_HTTP:
        judged = corpus[name].on_transport("http")
        assert (judged.level, dict(judged.levels)) == ("reference", {}), name
        assert judged.citation is not None
        text = " ".join(_sections(judged.citation.file)[judged.citation.section].split())
        assert "**MUST** be a single JSON-RPC _request_" in text, name
        assert judged.why is not None and judged.why.startswith("http: "), name


def test_a_request_without_the_version_header_is_a_reference_case_the_text_leaves_open(
        ) -> None:
    # The text lets a server that serves clients older than 2025-06-18 read the request as
    # 2025-03-26 (a MAY); only a server that serves none must reject it, which a harness
    # cannot tell from outside.
    if not SPEC_ROOT.is_dir():
        pytest.skip(f"the spec text is not at {SPEC_ROOT}")
    judged = {t.name: t for t in builtin_corpus()}[
        "negative-modern-protocol-version-header-missing"]
    assert (judged.level, dict(judged.levels)) == ("reference", {})
    assert judged.citation is not None
    text = " ".join(_sections(judged.citation.file)[judged.citation.section].split())
    assert "**MAY** treat a request that omits the header as protocol version" in text
    assert judged.why is not None
