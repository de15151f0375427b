"""What makes a response valid for an era (SPEC 5.2), as data: the checks a client runs on
every answer and the conformance harness reports.

:func:`validate_response` runs three layers and returns every problem as
``"<json path>: <what is wrong>"`` (empty when valid):

1. the JSON-RPC envelope (:func:`~toolkeeper.protocol.envelope.check_response`: ``jsonrpc``,
   the id equal in value and JSON type, exactly one of result/error, the error's shape);
2. the ``resultType`` discriminator: in the modern era it is required, a core value or the
   value of an extension the request declared, and ``input_required`` only on the methods
   that may ask for input; in the legacy era a missing one reads as ``complete``;
3. the method's payload, through the table :data:`PAYLOAD_CHECKS` (one row per method).

Additive unknown fields are never a problem: validation reads, it does not sieve.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.protocol import codes
from toolkeeper.protocol.envelope import RequestId, check_response
from toolkeeper.protocol.versions import HANDSHAKE_VERSIONS, Era

__all__ = [
    "CACHEABLE_METHODS",
    "CORE_RESULT_TYPES",
    "EXTENSION_RESULT_TYPES",
    "INPUT_REQUIRED_METHODS",
    "PAYLOAD_CHECKS",
    "RECOGNISED_MODERN_ERRORS",
    "TASKS_EXTENSION",
    "check_content",
    "check_error_status",
    "check_notification_answer",
    "check_result_type",
    "check_session_id",
    "check_stream",
    "descriptor_problems",
    "descriptor_warnings",
    "is_recognised_modern_error",
    "validate_response",
]

CORE_RESULT_TYPES: Final = frozenset({"complete", "input_required"})
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
EXTENSION_RESULT_TYPES: Final[Mapping[str, str]] = MappingProxyType({"task": TASKS_EXTENSION})
"""Extension ``resultType`` value -> the extension id a request must declare to receive it."""
_EXTENSION_METHODS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {"task": frozenset({"tools/call"})})
INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
CACHEABLE_METHODS: Final = frozenset({"server/discover", "tools/list", "prompts/list",
                                      "resources/list", "resources/templates/list",
                                      "resources/read"})

RECOGNISED_MODERN_ERRORS: Final = frozenset({
    codes.HEADER_MISMATCH, codes.MISSING_REQUIRED_CLIENT_CAPABILITY,
    codes.UNSUPPORTED_PROTOCOL_VERSION})
"""The errors only a modern peer sends (SPEC 5.1): proof of the modern era, never a reason to
fall back to the legacy one."""

Problems = list[str]
_ABSENT: Final = object()


def is_recognised_modern_error(error: object) -> bool:
    """Whether a JSON-RPC error object carries one of :data:`RECOGNISED_MODERN_ERRORS`."""
    return isinstance(error, dict) and type(error.get("code")) is int \
        and error["code"] in RECOGNISED_MODERN_ERRORS


def check_result_type(result: Mapping[str, Any], era: Era, method: str,
                      extensions: frozenset[str] = frozenset()) -> Problems:
    """Problems with ``result.resultType`` for ``method`` in ``era``; ``extensions`` are the ids
    the request declared in its client capabilities."""
    value = result.get("resultType")
    if value is None and "resultType" not in result:
        return [] if era is Era.LEGACY else ["$.result.resultType: required in the modern era"]
    if not isinstance(value, str):
        return ["$.result.resultType: must be a string"]
    if era is Era.LEGACY:
        return [] if value == "complete" else [
            f"$.result.resultType: {value!r} is not a legacy-era result"]
    if value == "input_required" and method not in INPUT_REQUIRED_METHODS:
        return [f"$.result.resultType: input_required is not allowed on {method}"]
    if value in CORE_RESULT_TYPES:
        return []
    extension = EXTENSION_RESULT_TYPES.get(value)
    if extension is None:
        return [f"$.result.resultType: unrecognised value {value!r}"]
    if extension not in extensions or method not in _EXTENSION_METHODS[value]:
        return [f"$.result.resultType: {value!r} needs the {extension} extension on this "
                "request and an eligible method"]
    return []


def check_error_status(value: Any, http_status: int, era: Era, *, streamed: bool = False
                       ) -> Problems:
    """Problems with the HTTP status an answer came with (SPEC 5.2: "each known protocol error
    has its HTTP status"; mcp-wire 4.5). Modern era only: a JSON error reply carries the code
    table's status (:func:`~toolkeeper.protocol.codes.http_status_for`), a result 200, and
    anything on a committed SSE stream (``streamed``) 200. The legacy era answers dispatched
    requests' errors with 200 and keeps 4xx for its transport, so it is not judged here.
    The client does not enforce this (a peer with a stray status stays usable); the
    conformance harness reports it."""
    if era is not Era.MODERN or not isinstance(value, dict):
        return []
    error = value.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    expected = 200 if streamed or type(code) is not int else codes.http_status_for(code)
    if http_status != expected:
        return [f"$: HTTP {http_status} where the modern era sends {expected}"]
    return []


def check_session_id(value: str | None) -> Problems:
    """Problems with the ``Mcp-Session-Id`` a legacy ``initialize`` answer minted (None: no
    header, a session-less server). The 2025-11-25 transport: visible ASCII only, 0x21 to
    0x7E, so the client can repeat it on every later request."""
    if value is None or (value and all("\x21" <= c <= "\x7e" for c in value)):
        return []
    return ["$.headers.mcp-session-id: must be visible ASCII (0x21 to 0x7E)"]


def check_notification_answer(http_status: int | None, body: bytes, messages: Sequence[Any]
                              ) -> Problems:
    """Problems with what answered a notification (SPEC 5.2): no JSON-RPC message may answer
    it, and over HTTP (``http_status`` not None) the accepted shape is 202 with an empty body
    (middleware that wraps ``None`` into ``{"result": null}`` fails here)."""
    problems: Problems = []
    if messages:
        problems.append("$: a notification was answered with a JSON-RPC message")
    if http_status is not None and http_status != 202:
        problems.append(f"$: HTTP {http_status} where an accepted notification gets 202")
    elif body.strip() and not messages:
        problems.append("$: an accepted notification gets an empty body")
    return problems


def check_stream(messages: Sequence[Any], request_id: RequestId | None) -> Problems:
    """Problems with the messages of one request's answer stream (SSE, or stdio lines) before
    the response is judged (SPEC 5.3): every message before the last is a notification or a
    request, and no message answers another id (an event whose id differs from the
    request's)."""
    problems: Problems = []
    last = len(messages) - 1
    for index, message in enumerate(messages):
        at = f"$.events[{index}]"
        if not isinstance(message, dict):
            problems.append(f"{at}: must be a JSON-RPC object")
            continue
        if "method" in message:
            continue
        got = message.get("id")
        if type(got) is not type(request_id) or got != request_id:
            problems.append(f"{at}.id: answers another request than the one sent")
        elif index != last:
            problems.append(f"{at}: the response must be the stream's last message")
    return problems


def _is_int(value: object) -> bool:
    return type(value) is int


def _cache_hints(result: Mapping[str, Any], era: Era) -> Problems:
    if era is not Era.MODERN or result.get("resultType") != "complete":
        return []
    problems: Problems = []
    ttl = result.get("ttlMs")
    if not (isinstance(ttl, int) and _is_int(ttl) and ttl >= 0):
        problems.append("$.result.ttlMs: required, an integer >= 0")
    if result.get("cacheScope") not in ("public", "private"):
        problems.append('$.result.cacheScope: required, "public" or "private"')
    return problems


def _descriptor_problems(tool: Any, seen: set[str]) -> Problems:
    """One descriptor's problems, as paths relative to it (``$`` is the descriptor); a name
    it uses first is added to ``seen``."""
    if not isinstance(tool, dict):
        return ["$: must be an object"]
    problems: Problems = []
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        problems.append("$.name: must be a non-empty string")
    elif name in seen:
        problems.append(f"$.name: duplicate tool name {name!r}")
    else:
        seen.add(name)
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append("$.inputSchema: must be an object schema with type object")
    if "description" in tool and not isinstance(tool["description"], str):
        problems.append("$.description: must be a string")
    return problems


def descriptor_problems(tools: Sequence[Any]) -> dict[int, Problems]:
    """Index -> the problems of each malformed ``tools/list`` descriptor (seed 004: a
    non-empty name unique in the list, the first use of a name keeping it; an object-rooted
    ``inputSchema``; a string ``description`` when present), paths relative to the
    descriptor. A client drops these one by one and shows the rest; the harness reports
    them (:func:`validate_response` does, under ``$.result.tools[i]``)."""
    seen: set[str] = set()
    found: dict[int, Problems] = {}
    for index, tool in enumerate(tools):
        problems = _descriptor_problems(tool, seen)
        if problems:
            found[index] = problems
    return found


def descriptor_warnings(tools: Sequence[Any]) -> dict[int, Problems]:
    """Index -> what a well-formed descriptor should have and lacks: a missing or empty
    ``description`` (seed 004 asks for useful descriptions; the spec makes it optional, so
    a SHOULD, a warning, never a failure)."""
    found: dict[int, Problems] = {}
    for index, tool in enumerate(tools):
        if isinstance(tool, dict):
            description = tool.get("description")
            if description is None or (isinstance(description, str)
                                       and not description.strip()):
                found[index] = ["$.description: missing or empty (a useful description "
                                "tells a model when to call the tool)"]
    return found


def _check_tools_page(result: Mapping[str, Any], era: Era) -> Problems:
    """The page's shape only: ``tools`` an array, ``nextCursor`` a string when present."""
    problems: Problems = []
    if not isinstance(result.get("tools"), list):
        problems.append("$.result.tools: must be an array")
    cursor = result.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        problems.append("$.result.nextCursor: must be a string")
    return problems


def _check_tools_list(result: Mapping[str, Any], era: Era) -> Problems:
    problems = _check_tools_page(result, era)
    tools = result.get("tools")
    if not isinstance(tools, list):
        return problems
    found = descriptor_problems(tools)
    listed = [f"$.result.tools[{index}]{problem[1:]}"
              for index in sorted(found) for problem in found[index]]
    return listed + problems


_TASK_STATUSES: Final = frozenset({"working", "input_required", "completed", "failed",
                                   "cancelled"})
_COMPLETION_MAX: Final = 100


def _is_timestamp(value: object) -> bool:
    """An ISO 8601 date and time (``2026-07-28T10:00:00Z``, with an offset or fraction)."""
    if not isinstance(value, str) or "T" not in value.upper():
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


_BLOCK_FIELDS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "text": ("text",), "image": ("data", "mimeType"), "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"), "resource": ()})
"""``ContentBlock`` type -> its required string fields (schema.json of both eras;
``resource`` holds an object checked by :func:`_check_embedded`)."""


def _check_embedded(block: Mapping[str, Any], at: str) -> Problems:
    resource = block.get("resource")
    if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
        return [f"{at}.resource: must be an object with a string uri"]
    if not isinstance(resource.get("text"), str) and not isinstance(resource.get("blob"), str):
        return [f"{at}.resource: needs a string text or blob"]
    return []


def check_content(content: Sequence[Any], at: str = "$.result.content") -> Problems:
    """Problems with a list of content blocks: each an object whose ``type`` is one of
    ``ContentBlock``'s, with that type's required fields (a text block its ``text``).
    Additional fields are allowed."""
    problems: Problems = []
    for index, block in enumerate(content):
        where = f"{at}[{index}]"
        if not isinstance(block, dict):
            problems.append(f"{where}: must be an object")
            continue
        kind = block.get("type")
        fields = _BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
        if fields is None:
            problems.append(f"{where}.type: not a content block type ({kind!r})")
            continue
        problems += [f"{where}.{name}: required, a string" for name in fields
                     if not isinstance(block.get(name), str)]
        if kind == "resource":
            problems += _check_embedded(block, where)
    return problems


def _check_task(result: Mapping[str, Any]) -> Problems:
    """A tasks-extension ``CreateTaskResult`` (flat, mcp-wire 7.4)."""
    problems: Problems = []
    if not isinstance(result.get("taskId"), str) or not result.get("taskId"):
        problems.append("$.result.taskId: required, a non-empty string")
    if result.get("status") not in _TASK_STATUSES:
        problems.append("$.result.status: must be a known task status")
    for key in ("createdAt", "lastUpdatedAt"):
        if not _is_timestamp(result.get(key)):
            problems.append(f"$.result.{key}: required, an ISO 8601 timestamp")
    ttl = result.get("ttlMs", _ABSENT)
    if ttl is _ABSENT or not (ttl is None or (isinstance(ttl, int) and _is_int(ttl)
                                              and ttl >= 0)):
        problems.append("$.result.ttlMs: required, an integer >= 0 or null")
    poll = result.get("pollIntervalMs")
    if "pollIntervalMs" in result and not (isinstance(poll, int) and _is_int(poll)
                                           and poll > 0):
        problems.append("$.result.pollIntervalMs: must be a positive integer")
    return problems


def _check_tools_call(result: Mapping[str, Any], era: Era) -> Problems:
    kind = result.get("resultType", "complete")
    if kind == "task":
        return _check_task(result)
    if kind == "input_required":
        if "inputRequests" not in result and "requestState" not in result:
            return ["$.result: input_required needs inputRequests or requestState"]
        return []
    if kind != "complete":
        return []
    problems: Problems = []
    content = result.get("content")
    if not isinstance(content, list):
        problems.append("$.result.content: must be an array")
    else:
        problems += check_content(content)
    if "isError" in result and not isinstance(result["isError"], bool):
        problems.append("$.result.isError: must be a boolean")
    return problems


def _check_discover(result: Mapping[str, Any], era: Era) -> Problems:
    problems: Problems = []
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        problems.append("$.result.supportedVersions: must be an array of strings")
    if not isinstance(result.get("capabilities"), dict):
        problems.append("$.result.capabilities: must be an object")
    return problems


def _check_initialize(result: Mapping[str, Any], era: Era) -> Problems:
    problems: Problems = []
    version = result.get("protocolVersion")
    if not isinstance(version, str) or version not in HANDSHAKE_VERSIONS:
        problems.append("$.result.protocolVersion: must be a legacy (handshake) revision")
    if not isinstance(result.get("capabilities"), dict):
        problems.append("$.result.capabilities: must be an object")
    info = result.get("serverInfo")
    if not isinstance(info, dict) or not isinstance(info.get("name"), str) \
            or not isinstance(info.get("version"), str):
        problems.append("$.result.serverInfo: must be an object with string name and version")
    return problems


def _check_completion(result: Mapping[str, Any], era: Era) -> Problems:
    completion = result.get("completion")
    if not isinstance(completion, dict):
        return ["$.result.completion: must be an object"]
    problems: Problems = []
    values = completion.get("values")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        problems.append("$.result.completion.values: must be an array of strings")
    elif len(values) > _COMPLETION_MAX:
        problems.append(f"$.result.completion.values: at most {_COMPLETION_MAX} values")
    total = completion.get("total")
    if "total" in completion and not (isinstance(total, int) and _is_int(total)
                                      and total >= 0):
        problems.append("$.result.completion.total: must be an integer >= 0")
    if "hasMore" in completion and not isinstance(completion["hasMore"], bool):
        problems.append("$.result.completion.hasMore: must be a boolean")
    return problems


PAYLOAD_CHECKS: Final[Mapping[str, Callable[[Mapping[str, Any], Era], Problems]]] = \
    MappingProxyType({
        "tools/list": _check_tools_list,
        "tools/call": _check_tools_call,
        "server/discover": _check_discover,
        "initialize": _check_initialize,
        "completion/complete": _check_completion,
    })
"""Method -> the check of its result payload (methods without a row: discriminator only)."""


def validate_response(value: Any, request_id: RequestId, era: Era, method: str,
                      extensions: frozenset[str] = frozenset(), *,
                      drop_descriptors: bool = False) -> Problems:
    """Every problem with ``value`` as the answer to a ``method`` request with ``request_id``
    in ``era`` (empty when valid). An error response is checked for shape only. With
    ``drop_descriptors`` a ``tools/list`` page is checked for its shape only: the caller
    drops each malformed descriptor (:func:`descriptor_problems`) and keeps the rest."""
    problems = check_response(value, request_id)
    if problems or "result" not in value:
        return problems
    result = value["result"]
    problems = check_result_type(result, era, method, extensions)
    if problems:
        return problems
    if method in CACHEABLE_METHODS:
        problems = _cache_hints(result, era)
    check = _check_tools_page if drop_descriptors and method == "tools/list" \
        else PAYLOAD_CHECKS.get(method)
    return problems + check(result, era) if check is not None else problems
