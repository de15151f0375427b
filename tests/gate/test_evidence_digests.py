"""The evidence bundle's digests: identical across runs and processes for the same evidence,
different when any byte of the redacted evidence differs (a property), blind to a secret's value
(it is redacted before it is hashed, and never kept); verification refuses a changed section,
a changed bundle digest, a malformed or unknown section and unredacted content."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolkeeper.gate.evidence import SECTIONS, bundle, verify_bundle

EVIDENCE: dict[str, Any] = {
    "healthWindows": [{"status": "healthy", "samples": 40}],
    "policy": {"minSamples": 10, "maxErrorRate": 0.01},
    "proxyEvidence": [{"finding": "buffered_stream"}],
    "rollbackEvidence": {"tool": "payments.lookup", "version": "4.0.0"},
    "sdkDiffs": [{"dropped": ["futureHint"]}],
    "transcripts": [{"case": "tools-call-valid", "passed": True}],
}
SECRET_HEADER = "Bearer sk-live-0123456789abcdefghijklmnopqrstuv"


def test_the_digest_is_the_same_in_another_process() -> None:
    here = bundle(EVIDENCE)
    there = subprocess.run(
        [sys.executable, "-c", "import json,sys; from toolkeeper.gate.evidence import bundle; "
         "print(bundle(json.loads(sys.stdin.read()))['digest'])"],
        input=json.dumps(EVIDENCE, sort_keys=False), capture_output=True, text=True, check=True,
        timeout=60)
    assert there.stdout.strip() == here["digest"] and here["digest"].startswith("sha256:")
    assert verify_bundle(here) == []


def test_a_secret_is_redacted_before_it_is_hashed_and_never_kept() -> None:
    one = bundle({**EVIDENCE, "proxyEvidence": [{"authorization": SECRET_HEADER}]})
    other = bundle({**EVIDENCE, "proxyEvidence": [{"authorization": SECRET_HEADER[:-1] + "w"}]})
    assert one["digest"] == other["digest"]
    assert "sk-live" not in json.dumps(one)
    assert verify_bundle(one) == []


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@given(st.sampled_from(SECTIONS), JSON, JSON)
def test_different_redacted_evidence_has_a_different_digest(name: str, a: Any, b: Any) -> None:
    first, second = bundle({**EVIDENCE, name: a}), bundle({**EVIDENCE, name: b})
    same = (json.dumps(first["sections"][name]["content"], sort_keys=True)
            == json.dumps(second["sections"][name]["content"], sort_keys=True))
    assert (first["digest"] == second["digest"]) == same


def test_a_changed_section_or_bundle_digest_is_refused() -> None:
    changed = bundle(EVIDENCE)
    changed["sections"]["sdkDiffs"]["content"] = [{"dropped": []}]
    assert verify_bundle(changed) == [{"code": "evidence.digest_mismatch",
                                       "path": "$.sections.sdkDiffs.digest"}]
    resealed = bundle(EVIDENCE)
    resealed["digest"] = "sha256:" + "0" * 64
    assert verify_bundle(resealed) == [{"code": "evidence.digest_mismatch", "path": "$.digest"}]


def test_malformed_unknown_missing_and_unredacted_sections_are_refused() -> None:
    value = bundle(EVIDENCE)
    value["sections"]["extra"] = value["sections"]["policy"]
    value["sections"]["policy"] = {"digest": "md5:abc", "content": {}}
    del value["sections"]["transcripts"]
    raw = {"authorization": SECRET_HEADER}
    value["sections"]["sdkDiffs"] = {"digest": bundle({**EVIDENCE, "sdkDiffs": []})[
        "sections"]["sdkDiffs"]["digest"], "content": raw}
    codes = [(r["code"], r["path"]) for r in verify_bundle(value)]
    assert ("evidence.malformed", "$.sections.extra") in codes
    assert ("evidence.malformed", "$.sections.policy") in codes
    assert ("evidence.malformed", "$.sections.transcripts") in codes
    assert ("evidence.unredacted", "$.sections.sdkDiffs.content") in codes
    assert verify_bundle([]) == [{"code": "evidence.malformed", "path": "$.sections"}]


def test_a_bundle_is_made_of_exactly_its_sections() -> None:
    from toolkeeper.errors import ToolkeeperError

    with pytest.raises(ToolkeeperError) as caught:
        bundle({k: v for k, v in EVIDENCE.items() if k != "transcripts"})
    assert caught.value.code == "evidence.malformed"
    assert caught.value.data["sections"] == ["transcripts"]
