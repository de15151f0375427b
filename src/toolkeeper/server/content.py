"""Tool results and the content blocks they carry (text, image, audio, resource links,
embedded resources, structured content), as small typed builders of the MCP wire shapes."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from toolkeeper.contracts.canonical import canonical_json

__all__ = [
    "ToolResult",
    "audio",
    "embedded_resource",
    "image",
    "resource_link",
    "text",
    "to_tool_result",
]

ContentBlock = dict[str, Any]
_NO_STRUCTURED: Final = object()


def _with_annotations(block: ContentBlock, annotations: Mapping[str, Any] | None
                      ) -> ContentBlock:
    if annotations:
        block["annotations"] = dict(annotations)
    return block


def text(value: str, *, annotations: Mapping[str, Any] | None = None) -> ContentBlock:
    """A text block."""
    return _with_annotations({"type": "text", "text": value}, annotations)


def image(data: bytes, mime_type: str, *, annotations: Mapping[str, Any] | None = None
          ) -> ContentBlock:
    """An image block (bytes are Base64-encoded)."""
    return _with_annotations({"type": "image", "data": base64.b64encode(data).decode("ascii"),
                              "mimeType": mime_type}, annotations)


def audio(data: bytes, mime_type: str, *, annotations: Mapping[str, Any] | None = None
          ) -> ContentBlock:
    """An audio block (bytes are Base64-encoded)."""
    return _with_annotations({"type": "audio", "data": base64.b64encode(data).decode("ascii"),
                              "mimeType": mime_type}, annotations)


def resource_link(uri: str, name: str, *, title: str | None = None,
                  description: str | None = None, mime_type: str | None = None,
                  size: int | None = None) -> ContentBlock:
    """A link to a resource the client may read."""
    block: ContentBlock = {"type": "resource_link", "uri": uri, "name": name}
    for key, value in (("title", title), ("description", description),
                       ("mimeType", mime_type), ("size", size)):
        if value is not None:
            block[key] = value
    return block


def embedded_resource(uri: str, *, text: str | None = None, blob: bytes | None = None,
                      mime_type: str | None = None) -> ContentBlock:
    """A resource embedded in the result: exactly one of ``text`` and ``blob``."""
    if (text is None) == (blob is None):
        raise ValueError("an embedded resource needs exactly one of text and blob")
    resource: dict[str, Any] = {"uri": uri}
    if mime_type is not None:
        resource["mimeType"] = mime_type
    if text is not None:
        resource["text"] = text
    else:
        assert blob is not None
        resource["blob"] = base64.b64encode(blob).decode("ascii")
    return {"type": "resource", "resource": resource}


class ToolResult(msgspec.Struct, frozen=True):
    """What a tool call returns: content blocks, optional structured content, the error flag.

    ``structured`` is any JSON value (object-only on 2025-era sessions; dropped there when it
    is not an object and on versions older than 2025-06-18). An immutable msgspec Struct (a
    handler builds one per call).
    """

    content: Sequence[ContentBlock] = ()
    structured: Any = _NO_STRUCTURED
    is_error: bool = False

    @property
    def has_structured(self) -> bool:
        return self.structured is not _NO_STRUCTURED

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": list(map(dict, self.content)),
                               "isError": self.is_error}
        if self.has_structured:
            out["structuredContent"] = self.structured
        return out


def _is_block(value: object) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("type"), str)


def to_tool_result(value: object) -> ToolResult:
    """Normalise a handler's return value: a ToolResult as is; a string as one text block; a
    mapping as structured content plus its canonical JSON as text; a list of content blocks as
    content; None as empty content. Anything else is a TypeError (a handler bug)."""
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult()
    if isinstance(value, str):
        return ToolResult((text(value),))
    if isinstance(value, Mapping):
        data = dict(value)
        return ToolResult((text(canonical_json(data).decode("utf-8")),), data)
    if isinstance(value, list | tuple) and all(_is_block(v) for v in value):
        return ToolResult(tuple(dict(v) for v in value))
    raise TypeError(f"a tool handler returned an unsupported value of type {type(value).__name__}")
