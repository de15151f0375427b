"""The transcript format: the built-in corpus is canonical, schema-valid and covers SPEC 5.3;
a fixture that is not canonical, or that the schema or the cross-field rules refuse, is
refused with a stable code."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import mcp_types._v2026_07_28 as modern_types
import pydantic
import pytest

from toolkeeper.conformance import builtin_corpus, canonical_text, load_directory, sdk_fixtures
from toolkeeper.conformance.transcript import parse_transcript
from toolkeeper.errors import ConformanceError

CORPUS = resources.files("toolkeeper.conformance").joinpath("transcripts")
SPEC_5_3 = {
    # golden
    "modern discovery": "golden-modern-server-discover",
    "method request with matching metadata and headers": "golden-modern-tools-list",
    "complete result with required fields": "golden-modern-tools-call",
    "input_required result": "golden-input-required-result",
    "extension result after the capability": "golden-task-result-after-capability",
    "legacy result without resultType in the legacy era": "golden-legacy-tools-list",
    "notification with no JSON-RPC response": "golden-modern-extension-notification",
    # negative
    "header/body mismatch": "negative-header-body-mismatch",
    "missing required capability": "negative-missing-required-capability",
    "unsupported matching protocol version": "negative-unsupported-protocol-version",
    "missing modern resultType": "negative-missing-result-type",
    "unknown resultType": "negative-unknown-result-type",
    "unadvertised resultType": "negative-unadvertised-task-result-type",
    "wrong jsonrpc": "negative-response-wrong-jsonrpc",
    "id of a different value": "negative-response-id-value",
    "id of a different JSON type": "negative-response-id-type",
    "both result and error": "negative-result-and-error",
    "neither result nor error": "negative-neither-result-nor-error",
    "error without integer code": "negative-error-code-not-integer",
    "error without string message": "negative-error-message-missing",
    "known protocol error on the wrong HTTP status": "negative-protocol-error-wrong-status",
    "response to a notification": "negative-notification-answered",
    "malformed envelope": "negative-missing-envelope",
    "proxy that collapses a protocol error": "negative-proxy-collapsed-protocol-error",
    "SSE buffered by a proxy": "negative-sse-buffered-by-proxy",
    "SSE event whose id differs from the request's": "negative-sse-event-id-differs",
}


def _input_required_answers() -> dict[str, Any]:
    """The ``input_required`` result of every golden fixture, corpus and SDK diff, by name."""
    found: dict[str, Any] = {}
    for transcript in (*builtin_corpus(), *sdk_fixtures()):
        body = transcript.response.body if transcript.response is not None else None
        result = body.get("result") if isinstance(body, dict) else None
        if transcript.case_class == "golden" and isinstance(result, dict) \
                and result.get("resultType") == "input_required":
            found[transcript.name] = result
    return found


def test_every_golden_input_required_answer_is_one_the_official_sdk_accepts() -> None:
    answers = _input_required_answers()
    assert "golden-input-required-result" in answers
    refused: dict[str, list[Any]] = {}
    for name, result in answers.items():
        try:
            modern_types.InputRequiredResult.model_validate(result)
        except pydantic.ValidationError as exc:
            refused[name] = [error["loc"] for error in exc.errors()]
    assert refused == {}


def _copy(name: str) -> bytes:
    return CORPUS.joinpath(f"{name}.json").read_bytes()


def test_the_corpus_holds_at_least_forty_canonical_cases_of_both_classes_and_eras() -> None:
    corpus = builtin_corpus()
    assert len(corpus) >= 40
    assert {t.case_class for t in corpus} == {"golden", "negative"}
    assert {t.version for t in corpus} == {"2026-07-28", "2025-11-25"}
    for transcript in corpus:
        assert canonical_text(dict(transcript.source)).encode() == _copy(transcript.name)


def test_every_spec_5_3_case_has_a_transcript_of_its_class() -> None:
    corpus = {t.name: t for t in builtin_corpus()}
    for item, name in SPEC_5_3.items():
        assert name in corpus, item
        assert corpus[name].case_class == name.split("-")[0], item


def test_every_negative_case_asserts_its_boundary_and_a_code_or_status() -> None:
    # (an ``answered`` case, where the text sets no outcome, asserts only a valid answer)
    for transcript in builtin_corpus():
        if transcript.case_class == "negative":
            expect = transcript.expect
            assert expect.boundary in ("transport", "envelope", "method", "tool"), transcript.name
            assert expect.outcome == "answered" or expect.code is not None \
                or isinstance(expect.status, int) or (
                isinstance(expect.status, list)
                and all(isinstance(s, int) for s in expect.status)), transcript.name


SPEC_ROOT = Path("/work/shared/spec/docs/specification")


def _sections(file: str) -> dict[str, str]:
    """A spec page's sections, heading -> its text up to the next heading of any level; the
    text before the first heading is cited by the page's title (its front matter)."""
    lines = (SPEC_ROOT / file).read_text("utf-8").splitlines()
    title = next(line.removeprefix("title:").strip() for line in lines
                 if line.startswith("title:"))
    sections: dict[str, list[str]] = {title: []}
    current = sections[title]
    for line in lines:
        if line.startswith("#"):
            current = sections.setdefault(line.lstrip("#").strip(), [])
        else:
            current.append(line)
    return {name: "\n".join(text) for name, text in sections.items()}


def test_every_case_names_a_level_and_a_section_that_exists_in_the_spec_text() -> None:
    if not SPEC_ROOT.is_dir():
        pytest.skip(f"the spec text is not at {SPEC_ROOT}")
    for transcript in builtin_corpus():
        for judged in (transcript, *(transcript.on_transport(t) for t in transcript.level_on)):
            assert judged.level in ("MUST", "SHOULD", "reference"), transcript.name
            cited = judged.citation
            assert cited is not None, transcript.name
            assert cited.section in _sections(cited.file), (transcript.name, cited.section)


def test_a_stdio_level_cites_the_client_duty_it_rests_on() -> None:
    # A case judged otherwise over stdio because the text puts the duty on the client cites
    # the stdio text's client rule, and says so in the finding it shows.
    if not SPEC_ROOT.is_dir():
        pytest.skip(f"the spec text is not at {SPEC_ROOT}")
    ruled = {t.name: t.on_transport("stdio") for t in builtin_corpus() if "stdio" in t.level_on}
    assert sorted(ruled) == sorted(STDIO_CLIENT_DUTY)
    for name, judged in ruled.items():
        assert judged.citation is not None
        text = _sections(judged.citation.file)[judged.citation.section]
        assert "The client **MUST NOT** write anything to the server's" in " ".join(
            text.split()), name
        assert (judged.level, dict(judged.levels)) == ("reference", {}), name
        assert judged.why is not None and judged.why.startswith("stdio: "), name


STDIO_CLIENT_DUTY = ("negative-batch-request", "negative-legacy-batch-request",
                     "negative-legacy-malformed-json", "negative-legacy-wrong-jsonrpc-version",
                     "negative-malformed-json", "negative-modern-params-not-object",
                     "negative-wrong-jsonrpc-version")


@pytest.mark.parametrize(("change", "path"), [
    (lambda v: v.__setitem__("transports", ["http"]), "$.levelOn.stdio"),
    (lambda v: v["levelOn"]["stdio"].pop("why"), "$.levelOn.stdio"),
    (lambda v: v["levelOn"].__setitem__("tcp", v["levelOn"]["stdio"]), "$.levelOn"),
])
def test_a_transport_level_is_refused_where_it_cannot_apply(change: object, path: str) -> None:
    value = json.loads(_copy("negative-malformed-json"))
    change(value)  # type: ignore[operator]
    with pytest.raises(ConformanceError) as caught:
        parse_transcript(canonical_text(value).encode(), "negative-malformed-json")
    assert caught.value.code == "conformance.transcript_invalid"
    assert caught.value.data["path"] == path


def test_a_live_case_without_its_level_or_citation_is_refused() -> None:
    source = json.loads(CORPUS.joinpath("golden-modern-tools-list.json").read_text("utf-8"))
    for missing in ("level", "citation"):
        value = {k: v for k, v in source.items() if k != missing}
        with pytest.raises(ConformanceError) as caught:
            parse_transcript(canonical_text(value).encode("utf-8"), "golden-modern-tools-list")
        assert caught.value.code == "conformance.transcript_invalid"


def test_sse_is_covered_live_and_recorded() -> None:
    corpus = builtin_corpus()
    assert any(t.mode == "live" and t.expect.stream == "open" for t in corpus)
    assert sum(1 for t in corpus if t.mode == "recorded" and t.expect.stream == "sse") >= 3


@pytest.mark.parametrize("rewrite", [
    lambda value: json.dumps(value, indent=2) + "\n",          # keys not sorted
    lambda value: json.dumps(value, sort_keys=True) + "\n",    # not indented
    lambda value: canonical_text(value).rstrip("\n"),          # no trailing newline
    lambda value: canonical_text(value).replace("\n", "\r\n"),  # CRLF
])
def test_a_fixture_that_is_not_canonical_is_refused(rewrite: object) -> None:
    value = json.loads(_copy("negative-header-body-mismatch"))
    value = {k: value[k] for k in reversed(list(value))}
    data = rewrite(value).encode()  # type: ignore[operator]
    with pytest.raises(ConformanceError) as caught:
        parse_transcript(data, "negative-header-body-mismatch")
    assert caught.value.code == "conformance.not_canonical"
    assert caught.value.data == {"transcript": "negative-header-body-mismatch"}


@pytest.mark.parametrize(("change", "path"), [
    (lambda v: v.__setitem__("class", "silver"), "$.class"),
    (lambda v: v["expect"].__setitem__("outcome", "maybe"), "$.expect.outcome"),
    (lambda v: v.__setitem__("era", "2024-01-01"), "$.era"),
    (lambda v: v["expect"].__setitem__("boundary", None), "$.expect.boundary"),
    (lambda v: v["expect"].__setitem__("outcome", "accepted"), "$.expect.outcome"),
    (lambda v: v.__setitem__("mode", "recorded"), "$.response"),
    (lambda v: v.__setitem__("name", "negative-other-name"), "$.name"),
    (lambda v: v["request"]["headers"].__setitem__("X-Evil", "a\r\nInjected: 1"),
     "$.request.headers.X-Evil"),
    (lambda v: v["request"]["headers"].__setitem__("X-Evil", ["ok", "a\nb"]),
     "$.request.headers.X-Evil"),
    (lambda v: v["request"]["headers"].__setitem__("Bad Name", "x"), "$.request.headers"),
])
def test_a_fixture_the_schema_or_the_rules_refuse_names_the_place(change: object,
                                                                   path: str) -> None:
    value = json.loads(_copy("negative-header-body-mismatch"))
    change(value)  # type: ignore[operator]
    with pytest.raises(ConformanceError) as caught:
        parse_transcript(canonical_text(value).encode(), "negative-header-body-mismatch")
    assert caught.value.code == "conformance.transcript_invalid"
    assert caught.value.data["path"] == path


def test_a_directory_with_a_non_canonical_fixture_is_refused_as_a_whole(tmp_path: Path
                                                                         ) -> None:
    (tmp_path / "golden-modern-tools-list.json").write_bytes(_copy("golden-modern-tools-list"))
    (tmp_path / "golden-modern-server-discover.json").write_text(
        json.dumps(json.loads(_copy("golden-modern-server-discover"))))
    with pytest.raises(ConformanceError) as caught:
        load_directory(tmp_path)
    assert caught.value.code == "conformance.not_canonical"
    assert caught.value.data == {"transcript": "golden-modern-server-discover"}


def test_an_empty_or_missing_directory_is_refused(tmp_path: Path) -> None:
    for directory in (tmp_path, tmp_path / "absent"):
        with pytest.raises(ConformanceError) as caught:
            load_directory(directory)
        assert caught.value.code == "conformance.no_transcripts"


def test_an_entry_that_cannot_be_read_as_a_file_is_refused_with_its_name(tmp_path: Path
                                                                         ) -> None:
    (tmp_path / "golden-modern-tools-list.json").write_bytes(_copy("golden-modern-tools-list"))
    (tmp_path / "not-a-file.json").mkdir()
    with pytest.raises(ConformanceError) as caught:
        load_directory(tmp_path)
    assert caught.value.code == "conformance.transcript_unreadable"
    assert caught.value.data == {"transcript": "not-a-file", "error": "IsADirectoryError"}
