"""Tool results and the content blocks they carry (text, image, audio, resource links,
embedded resources, structured content), as small typed builders of the MCP wire shapes."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import JsonRpcError

__all__ = [
    "RESERVED_META_PREFIX",
    "ForwardedError",
    "ForwardedResult",
    "ToolResult",
    "audio",
    "check_content",
    "embedded_resource",
    "image",
    "resource_link",
    "text",
    "to_tool_result",
]

ContentBlock = dict[str, Any]
_NO_STRUCTURED: Final = object()

_REQUIRED: Final[dict[str, tuple[str, ...]]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": (),
}
"""Each content block type of ``CallToolResult.content`` (both eras, mcp-wire 7.2) and the
string members it requires (``resource`` requires an object, checked apart)."""

_OPTIONAL_STRINGS: Final[dict[str, tuple[str, ...]]] = {
    "resource_link": ("title", "description", "mimeType"),
}
_AUDIENCES: Final = frozenset({"user", "assistant"})


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


RESERVED_META_PREFIX: Final = "io.modelcontextprotocol/"
"""``_meta`` keys under this prefix belong to one hop of a conversation: a forwarded result's are
never copied to the caller (the gateway sets its own)."""

_OWN_FIELDS: Final = frozenset({"content", "structuredContent", "isError", "_meta",
                                "resultType"})
"""The members of a ``CallToolResult`` a :class:`ForwardedResult` holds apart (``resultType``
is the caller's era's, set by the gateway; never copied across)."""


class ForwardedResult(ToolResult, frozen=True):
    """A result another MCP server sent, passed on as it came: ``extra`` holds its members the
    gateway does not interpret (additive fields such as ``futureHint``), sent as they stand;
    ``meta`` its ``_meta`` less the reserved per-hop keys, under the gateway's own keys (the
    gateway's win). Content, structured content and ``isError`` are checked like any result."""

    extra: Mapping[str, Any] = msgspec.field(default_factory=dict)
    meta: Mapping[str, Any] = msgspec.field(default_factory=dict)

    @classmethod
    def from_wire(cls, result: Mapping[str, Any]) -> ForwardedResult:
        """A wire ``CallToolResult`` (its shape already validated by the client): TypeError
        when ``content`` is not a list or ``isError`` not a boolean."""
        content = result.get("content", [])
        is_error = result.get("isError", False)
        if type(content) is not list or type(is_error) is not bool:
            raise TypeError("a forwarded result needs a content list and a boolean isError")
        meta = result.get("_meta")
        kept = ({key: value for key, value in meta.items()
                 if not key.startswith(RESERVED_META_PREFIX)}
                if meta and isinstance(meta, Mapping) else {})
        extra = ({} if result.keys() <= _OWN_FIELDS
                 else {key: value for key, value in result.items() if key not in _OWN_FIELDS})
        if "structuredContent" in result:
            return cls(tuple(content), result["structuredContent"], is_error, extra, kept)
        return cls(tuple(content), is_error=is_error, extra=extra, meta=kept)

    def to_wire(self) -> dict[str, Any]:
        out = super().to_wire()
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    def with_meta(self, wire: dict[str, Any]) -> None:
        """Put this result's ``_meta`` under the gateway's in ``wire`` (the gateway's keys
        win)."""
        if self.meta:
            wire["_meta"] = {**self.meta, **wire["_meta"]}


class ForwardedError(JsonRpcError):
    """A JSON-RPC error another MCP server answered a forwarded call with, raised by the
    handler that forwarded it: the caller gets it as it came (code, message, data), not the
    generic failure result."""

    default_code = "jsonrpc.forwarded"


def check_content(blocks: Sequence[Any]) -> None:
    """Refuse (ValueError) content a client could not parse as MCP content blocks: an unknown
    type, a required member missing or not a string, an embedded resource without its uri and
    exactly one of text and blob, annotations out of range (audience other than user and
    assistant, priority outside 0 to 1), a ``_meta`` that is not an object. The official
    client refuses the whole result then, so a handler's malformed block is its failure."""
    for index, block in enumerate(blocks):
        if (type(block) is dict and len(block) == 2 and block.get("type") == "text"
                and type(block.get("text")) is str):
            continue  # the common block, as text() builds it
        kind = (block.get("type") if type(block) is dict or isinstance(block, Mapping)
                else None)
        if type(kind) is not str or (required := _REQUIRED.get(kind)) is None:
            raise ValueError(f"content[{index}]: not a content block of a known type")
        for key in required:
            if type(block.get(key)) is not str:
                raise ValueError(f"content[{index}]: {kind} needs a string {key!r}")
        if len(block) > len(required) + 1 or kind == "resource":  # more to check
            _check_optional(index, kind, block)


def _check_optional(index: int, kind: str, block: Mapping[str, Any]) -> None:
    where = f"content[{index}]"
    for key in _OPTIONAL_STRINGS.get(kind, ()):
        if key in block and type(block[key]) is not str:
            raise ValueError(f"{where}: {kind} {key!r} must be a string")
    if kind == "resource_link" and "size" in block and type(block["size"]) is not int:
        raise ValueError(f"{where}: resource_link 'size' must be an integer")
    if kind == "resource":
        resource = block.get("resource")
        if not (isinstance(resource, Mapping) and type(resource.get("uri")) is str
                and (type(resource.get("text")) is str) != (type(resource.get("blob")) is str)
                and ("text" in resource) != ("blob" in resource)):
            raise ValueError(f"{where}: resource needs a uri and exactly one of text and blob")
    if "_meta" in block and not isinstance(block["_meta"], Mapping):
        raise ValueError(f"{where}: '_meta' must be an object")
    if "annotations" in block:
        _check_annotations(where, block["annotations"])


def _check_annotations(where: str, annotations: Any) -> None:
    if not isinstance(annotations, Mapping):
        raise ValueError(f"{where}: annotations must be an object")
    audience = annotations.get("audience")
    if audience is not None and not (isinstance(audience, list | tuple)
                                     and all(type(a) is str and a in _AUDIENCES
                                                 for a in audience)):
        raise ValueError(f"{where}: annotations audience must list user or assistant")
    priority = annotations.get("priority")
    if priority is not None and not (type(priority) in (int, float) and 0 <= priority <= 1):
        raise ValueError(f"{where}: annotations priority must be a number from 0 to 1")
    modified = annotations.get("lastModified")
    if modified is not None and type(modified) is not str:
        raise ValueError(f"{where}: annotations lastModified must be a string")


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
