"""An in-memory twin of a connected client session for kernel tests: a small versioned tool
server that lists descriptors, gates ``_meta.schemaVersion`` as the gateway does (a retired
pin is -32602 with ``action: "relist"``), runs handlers, records every exchange, and can fail
an attempt with a transient client error after (or before) the handler ran."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.spec import SideEffect, spec_from_mapping
from toolkeeper.errors import ClientError
from toolkeeper.protocol.versions import Era

__all__ = ["FakeListing", "FakeReply", "FakeSession", "Sent", "demo_descriptor", "descriptor"]

ROOT_DEMO = "toolkeeper.demo"


def demo_descriptor(file_name: str) -> dict[str, Any]:
    """The MCP descriptor of a demo contract file (``payments.lookup-1.0.0.json``)."""
    from importlib import resources

    raw = resources.files(ROOT_DEMO).joinpath(file_name).read_bytes()
    return spec_from_mapping(loads_json(raw)).to_mcp()


def descriptor(name: str, schema: dict[str, Any], *, version: str | None = None,
               side_effect: SideEffect | None = None) -> dict[str, Any]:
    """A bare descriptor; ``version`` goes to ``_meta.schemaVersion``; ``side_effect`` to
    annotations the way toolkeeper derives them (None: no annotations at all)."""
    out: dict[str, Any] = {"name": name, "description": f"{name} tool", "inputSchema": schema}
    if version is not None:
        out["_meta"] = {"schemaVersion": version}
    if side_effect is not None:
        hints = {SideEffect.READ: (True, True, False),
                 SideEffect.IDEMPOTENT_WRITE: (False, True, False),
                 SideEffect.WRITE: (False, False, False),
                 SideEffect.DESTRUCTIVE: (False, False, True)}[side_effect]
        out["annotations"] = dict(zip(("readOnlyHint", "idempotentHint", "destructiveHint"),
                                      hints, strict=True))
    return out


@dataclass(frozen=True)
class FakeListing:
    tools: list[dict[str, Any]]
    ttl_ms: int | None = None
    cache_scope: str | None = None


@dataclass(frozen=True)
class FakeReply:
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    http_status: int | None = 200


@dataclass(frozen=True)
class Sent:
    """One ``tools/call`` attempt as the session received it."""

    name: str
    arguments: Any
    meta: dict[str, Any] | None
    request_id: str | int | None


def _relist(name: str, requested: str, current: str | None) -> dict[str, Any]:
    return {"code": -32602, "message": f"schema version {requested} of tool {name!r} is retired",
            "data": {"reason": "schema_version_retired", "tool": name,
                     "requestedVersion": requested, "currentVersion": current,
                     "action": "relist"}}


@dataclass
class FakeSession:
    """Tools by name: the listed descriptor and the versions that are still callable. A pin to
    a version no longer callable is refused with ``action: relist``."""

    era: Era = Era.MODERN
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    callable_versions: dict[str, set[str]] = field(default_factory=dict)
    ttl_ms: int | None = 0
    cache_scope: str | None = "private"
    handler: Callable[[str, Any], dict[str, Any]] | None = None
    fail_attempts: dict[int, tuple[ClientError, bool]] = field(default_factory=dict)
    """Attempt number (1-based, over all calls) -> (error to raise, whether the handler ran)."""
    changes: list[None] = field(default_factory=list)
    """What ``tools_changed()`` yields (one item per list_changed notification), then it ends."""
    lists: int = 0
    sent: list[Sent] = field(default_factory=list)
    executed: list[Sent] = field(default_factory=list)

    def publish(self, tool: dict[str, Any], *, retire_previous: bool = False) -> None:
        name = tool["name"]
        version = tool.get("_meta", {}).get("schemaVersion")
        versions = self.callable_versions.setdefault(name, set())
        if retire_previous:
            versions.clear()
        if version is not None:
            versions.add(version)
        self.tools[name] = copy.deepcopy(tool)

    async def tools_changed(self) -> AsyncIterator[None]:
        for item in self.changes:
            yield item

    async def list_tools(self) -> FakeListing:
        self.lists += 1
        return FakeListing([copy.deepcopy(t) for t in self.tools.values()],
                           self.ttl_ms if self.era is Era.MODERN else None,
                           self.cache_scope if self.era is Era.MODERN else None)

    async def call_tool(self, name: str, arguments: Any, *, meta: dict[str, Any] | None = None,
                        request_id: str | int | None = None) -> FakeReply:
        sent = Sent(name, copy.deepcopy(arguments), copy.deepcopy(meta), request_id)
        self.sent.append(sent)
        failure = self.fail_attempts.get(len(self.sent))
        if failure is not None and not failure[1]:
            raise failure[0]
        tool = self.tools.get(name)
        if tool is None:
            return FakeReply(error={"code": -32602, "message": f"Unknown tool: {name}"})
        pinned = (meta or {}).get("schemaVersion")
        current = tool.get("_meta", {}).get("schemaVersion")
        if pinned is not None and pinned not in self.callable_versions.get(name, set()):
            return FakeReply(error=_relist(name, pinned, current))
        self.executed.append(sent)
        result = (self.handler(name, arguments) if self.handler is not None else
                  {"content": [{"type": "text", "text": "ok"}], "isError": False})
        if failure is not None:
            raise failure[0]
        return FakeReply(result=result)
