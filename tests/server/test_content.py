"""Content block builders produce the MCP wire shapes."""

from __future__ import annotations

import pytest

from toolkeeper.server import audio, embedded_resource, image, resource_link, text
from toolkeeper.server.content import check_content


def test_text_blocks_with_and_without_annotations() -> None:
    assert text("hi") == {"type": "text", "text": "hi"}
    assert text("hi", annotations={"audience": ["user"]}) == {
        "type": "text", "text": "hi", "annotations": {"audience": ["user"]}}


def test_binary_blocks_are_base64() -> None:
    assert image(b"\x89PNG", "image/png") == {"type": "image", "data": "iVBORw==",
                                               "mimeType": "image/png"}
    assert audio(b"RIFF", "audio/wav") == {"type": "audio", "data": "UklGRg==",
                                            "mimeType": "audio/wav"}


def test_resource_links_carry_only_given_fields() -> None:
    assert resource_link("file:///a.txt", "a.txt", mime_type="text/plain", size=3) == {
        "type": "resource_link", "uri": "file:///a.txt", "name": "a.txt",
        "mimeType": "text/plain", "size": 3}


def test_embedded_resources_hold_exactly_one_of_text_and_blob() -> None:
    assert embedded_resource("mem://x", text="t", mime_type="text/plain") == {
        "type": "resource", "resource": {"uri": "mem://x", "mimeType": "text/plain",
                                         "text": "t"}}
    assert embedded_resource("mem://y", blob=b"\x00") == {
        "type": "resource", "resource": {"uri": "mem://y", "blob": "AA=="}}
    with pytest.raises(ValueError):
        embedded_resource("mem://z")
    with pytest.raises(ValueError):
        embedded_resource("mem://z", text="a", blob=b"b")


def test_every_helper_block_passes_the_content_check() -> None:
    check_content([text("t", annotations={"audience": ["user"], "priority": 0.5}),
                   image(b"x", "image/png"), audio(b"x", "audio/wav"),
                   resource_link("file:///a", "a", title="A", size=1),
                   embedded_resource("mem://x", text="t"), embedded_resource("mem://y", blob=b"")])


@pytest.mark.parametrize("block", [
    {"type": "video", "data": "x"},
    {"text": "no type"},
    "text",
    {"type": "text"},
    {"type": "text", "text": 5},
    {"type": "image", "data": "x"},
    {"type": "resource_link", "uri": "file:///a"},
    {"type": "resource_link", "uri": "file:///a", "name": "a", "size": "3"},
    {"type": "resource_link", "uri": "file:///a", "name": "a", "title": 1},
    {"type": "resource"},
    {"type": "resource", "resource": {"uri": "mem://x"}},
    {"type": "resource", "resource": {"uri": "mem://x", "text": "t", "blob": "AA=="}},
    {"type": "resource", "resource": {"text": "t"}},
    {"type": "text", "text": "t", "_meta": []},
    {"type": "text", "text": "t", "annotations": []},
    {"type": "text", "text": "t", "annotations": {"priority": 5}},
    {"type": "text", "text": "t", "annotations": {"priority": True}},
    {"type": "text", "text": "t", "annotations": {"audience": ["robot"]}},
    {"type": "text", "text": "t", "annotations": {"audience": [["user"]]}},
    {"type": "text", "text": "t", "annotations": {"lastModified": 0}},
])
def test_a_block_a_client_could_not_parse_is_refused(block: object) -> None:
    with pytest.raises(ValueError):
        check_content([text("fine"), block])
