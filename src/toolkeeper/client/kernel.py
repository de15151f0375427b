"""The client kernel: the agent-side loop that never calls a stale contract (SPEC 4, issue 15).

:class:`Kernel` wraps one connected session (any object shaped like :class:`Session`: the
client's ``ClientSession``, or an in-memory twin in tests) and governs its calls:

1. **Cache.** Tools are listed once per connection and kept (:mod:`~toolkeeper.client.cache`);
   ``notifications/tools/list_changed`` and a re-list refusal drop the listing.
2. **Validate, repair, one model turn.** A listed input schema that is not self-contained (an
   external ``$ref``) is refused before anything is sent (``client.schema_not_self_contained``,
   with the schema code and the reference's path). Arguments the listed input schema accepts go out as
   given (the fast path: one compiled validation). Otherwise the repair pass runs (SPEC 1.3,
   unless disabled); if errors remain and a :class:`~toolkeeper.client.model.Model` is
   attached, it gets exactly one turn with the descriptor, the repaired arguments and every
   remaining error, sorted; its answer is validated, then sent, or the kernel stops with the
   answer's errors. Arguments the listed contract refuses are never sent.
3. **Pin.** Every call carries ``_meta.schemaVersion`` from the cached descriptor when the
   server published one there, and nothing otherwise (a version is never invented).
4. **Re-list once.** On the gateway's refusal (JSON-RPC -32602 whose ``data.action`` is
   ``"relist"``, SPEC 3.4) the kernel lists again, takes the arguments as the caller (or the
   model) gave them, and re-validates them under the new contract: repair may coerce and fill
   again, but a property the new contract drops that the old one accepted is an error, never
   a silent loss. Valid: one more call, pinned to the new version. Not valid: no call, and an
   :class:`~toolkeeper.client.kernel_outcome.Incompatibility` with the classifier's changes
   between the two input schemas. A second refusal is returned as it is: one extra round trip
   per call at most, never a loop.
5. **Retry** transient failures only where ``RETRYABLE[side_effect]`` allows
   (:mod:`~toolkeeper.client.retry`), reusing the request id so a retried idempotent call is
   the same request.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from toolkeeper.client.cache import CachedTool, SharedListings, ToolCache
from toolkeeper.client.kernel_outcome import CallOutcome, Incompatibility
from toolkeeper.client.model import Model, ModelTurn, read_answer
from toolkeeper.client.retry import RetryPolicy
from toolkeeper.contracts.changes import Change
from toolkeeper.contracts.classify import classify_schemas
from toolkeeper.contracts.repair import Repair, repair
from toolkeeper.contracts.spec import SideEffect
from toolkeeper.contracts.validate import Issue
from toolkeeper.errors import (
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    SchemaError,
    ServerUnavailableError,
)
from toolkeeper.protocol.versions import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION, Era

__all__ = ["RELIST_ACTION", "Kernel", "Session", "is_relist_refusal"]

RELIST_ACTION = "relist"
_INVALID_PARAMS = -32602
_DROP = "drop.additional_property"
_NOT_AN_OBJECT = Issue("$", "tool arguments must be a JSON object", "type")
_ERA_VERSION = {Era.MODERN: LATEST_MODERN_VERSION, Era.LEGACY: LATEST_HANDSHAKE_VERSION}


_TRANSIENT: Final = (ClientConnectionError, ClientTimeoutError, ServerUnavailableError)
"""What ends a change stream without ending :meth:`Kernel.watch`: it opens the stream again."""


class _Listing(Protocol):
    @property
    def tools(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def ttl_ms(self) -> int | None: ...

    @property
    def cache_scope(self) -> str | None: ...


class _Reply(Protocol):
    @property
    def result(self) -> dict[str, Any] | None: ...

    @property
    def error(self) -> dict[str, Any] | None: ...


class Session(Protocol):
    """What the kernel needs of a connected session (era already selected)."""

    @property
    def era(self) -> Era: ...

    async def list_tools(self) -> _Listing: ...

    async def call_tool(self, name: str, arguments: Any, *, meta: dict[str, Any] | None = None,
                        request_id: str | int | None = None) -> _Reply: ...

    def tools_changed(self) -> AsyncIterator[None]: ...


def is_relist_refusal(error: Mapping[str, Any] | None) -> bool:
    """Whether a JSON-RPC error is the gateway's re-list refusal (SPEC 3.4 step 2)."""
    if error is None or error.get("code") != _INVALID_PARAMS:
        return False
    data = error.get("data")
    return isinstance(data, dict) and data.get("action") == RELIST_ACTION


@dataclass(frozen=True, slots=True)
class _Prepared:
    """Arguments ready (or not) for one contract: what to send, what the caller or the model
    gave (``intended``), the repairs applied and the errors left."""

    arguments: Any
    intended: Any
    repairs: tuple[Repair, ...] = ()
    errors: tuple[Issue, ...] = ()
    model_turns: int = 0


def _not_self_contained(tool: CachedTool, problem: SchemaError) -> ClientError:
    """The refusal to call a tool whose listed input schema refers outside itself: nothing is
    sent (the arguments cannot be judged, and a validator would have to fetch a document)."""
    return ClientError(f"the input schema of {tool.name!r} is not self-contained "
                       f"({problem.code} at {problem.path or '$'}): the call is not sent",
                       code="client.schema_not_self_contained",
                       data={"tool": tool.name, "cause": problem.code,
                             "path": problem.path or "$"})


def _object_errors(arguments: Any) -> tuple[Issue, ...]:
    """MCP sends arguments as an object, whatever a schema would accept."""
    return () if isinstance(arguments, dict) else (_NOT_AN_OBJECT,)


def _drops(repairs: Iterable[Repair]) -> set[str]:
    return {r.path for r in repairs if r.rule == _DROP}


def _changes(before: CachedTool, after: CachedTool | None) -> tuple[Change, ...]:
    old = before.input_schema
    new = after.input_schema if after is not None else None
    if old is None or new is None:
        return ()
    try:
        return classify_schemas(old, new).changes
    except SchemaError:
        return ()


class Kernel:
    """Governed calls over one session. ``model``: the one corrective turn (None: stop with
    the errors). ``repair``: run the repair pass (SPEC 1.3). ``shared``, ``endpoint``,
    ``token``: share listings across connections as their ``cacheScope`` allows."""

    def __init__(self, session: Session, *, model: Model | None = None, repair: bool = True,
                 retry: RetryPolicy | None = None, shared: SharedListings | None = None,
                 endpoint: str = "", token: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.session = session
        self._model = model
        self._repair = repair
        self._retry = retry if retry is not None else RetryPolicy()
        era = session.era
        self.era_version: str = getattr(session, "version", None) or _ERA_VERSION[era]
        self.cache = ToolCache(modern=era is Era.MODERN, endpoint=endpoint, token=token,
                               shared=shared, clock=clock)
        self._ids = itertools.count(1)

    def tools_changed(self) -> None:
        """The server said its tools changed: the next use lists again."""
        self.cache.invalidate()

    async def watch(self, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                    first_s: float = 0.5, max_s: float = 30.0) -> None:
        """Drop the listing on every ``notifications/tools/list_changed`` the session hears
        (its ``tools_changed()`` stream, whose open also drops it); run it in a task and
        cancel the task to stop. A stream that ends or fails transiently (connection,
        timeout, unavailable) is opened again under the session's current id after
        ``sleep(delay)``: ``first_s`` doubling to ``max_s``, back to ``first_s`` after a
        stream that opened. A refusal (refused, authentication, protocol violation) raises."""
        delay = first_s
        while True:
            opened = False
            try:
                async for _ in self.session.tools_changed():
                    opened = True
                    self.tools_changed()
            except _TRANSIENT:
                pass
            if opened:
                delay = first_s
            await sleep(delay)
            delay = min(delay * 2, max_s)

    async def refresh(self) -> None:
        """List the tools now (a read: retried per policy) and replace the cached listing."""
        listing, _ = await self._retry.run(self.session.list_tools, SideEffect.READ)
        self.cache.store(listing.tools, listing.ttl_ms, listing.cache_scope)

    async def tools(self) -> list[CachedTool]:
        """The listed tools, from the cache while it is fresh, else listed again."""
        if not self.cache.fresh():
            await self.refresh()
        listing = self.cache.listing
        return list(listing.tools.values()) if listing is not None else []

    async def _lookup(self, name: str) -> CachedTool | None:
        """The cached entry; lists when there is no listing or the tool is missing from it
        (one round trip at most: a tool still missing is not listed)."""
        found = self.cache.get(name)
        if found is not None:
            return found
        await self.refresh()
        return self.cache.get(name)

    async def _prepare(self, tool: CachedTool, arguments: Any, *, turn: bool) -> _Prepared:
        if tool.schema_problem is not None:
            raise _not_self_contained(tool, tool.schema_problem)
        compiled = tool.compiled  # None: not a schema we can judge; the server does
        if compiled is None or compiled.is_valid(arguments):
            return _Prepared(arguments, arguments, errors=_object_errors(arguments))
        schema = tool.input_schema
        if self._repair and schema is not None:
            fixed = repair(arguments, schema)
            current, repairs, errors = fixed.arguments, fixed.repairs, fixed.errors
        else:
            current, repairs, errors = arguments, (), tuple(compiled.errors(arguments))
        if not errors or self._model is None or not turn:
            return _Prepared(current, arguments, repairs, errors)
        said = await self._model.correct(ModelTurn(tool.descriptor, current, errors))
        try:
            answer = read_answer(said)
        except ClientError as exc:  # text that is not JSON: an error like any other
            return _Prepared(current, arguments, repairs, (Issue("$", exc.message, "model"),), 1)
        remaining = tuple(compiled.errors(answer)) or _object_errors(answer)
        return _Prepared(answer, answer, repairs, remaining, 1)

    def _meta(self, tool: CachedTool, meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if tool.version is None:
            return dict(meta) if meta else None
        pinned = dict(meta) if meta else {}
        pinned["schemaVersion"] = tool.version
        return pinned

    async def _send(self, tool: CachedTool, arguments: Any, meta: Mapping[str, Any] | None
                    ) -> tuple[_Reply, int]:
        call_meta = self._meta(tool, meta)
        retryable = self._retry.allows(tool.side_effect)
        request_id = f"toolkeeper-kernel-{next(self._ids)}" if retryable else None
        call = self.session.call_tool

        async def send() -> _Reply:
            return await call(tool.name, arguments, meta=call_meta, request_id=request_id)

        return await self._retry.run(send, tool.side_effect)

    async def call(self, name: str, arguments: Any, *, meta: Mapping[str, Any] | None = None
                   ) -> CallOutcome:
        """One governed ``tools/call`` (see the module docstring); transport failures that
        are not retried propagate as the client's exceptions."""
        tool = await self._lookup(name)
        if tool is None:
            return CallOutcome(name, self.era_version, None, arguments, errors=(
                Issue("$", f"no tool named {name!r} is listed", "tool"),))
        prepared = await self._prepare(tool, arguments, turn=True)
        if prepared.errors:
            return self._outcome(tool, prepared)
        reply, attempts = await self._send(tool, prepared.arguments, meta)
        if tool.version is not None and is_relist_refusal(reply.error):
            return await self._relist(tool, prepared, reply, meta, attempts)
        return self._outcome(tool, prepared, reply, attempts=attempts)

    async def _relist(self, before: CachedTool, first: _Prepared, refused: _Reply,
                      meta: Mapping[str, Any] | None, attempts: int) -> CallOutcome:
        self.cache.invalidate()
        await self.refresh()
        after = self.cache.get(before.name)
        if after is None:
            gone = (Issue("$", f"tool {before.name!r} is no longer listed", "tool"),)
            return CallOutcome(before.name, self.era_version, None, first.arguments,
                               errors=gone, relisted=True, sent=True, error=refused.error,
                               incompatible=Incompatibility(before.version, None, ()),
                               model_turns=first.model_turns, attempts=attempts)
        prepared = await self._prepare(after, first.intended, turn=False)
        lost = _drops(prepared.repairs) - _drops(first.repairs)
        errors = tuple(sorted((*prepared.errors, *(
            Issue(path, "the new contract no longer accepts this property",
                  "additionalProperties") for path in lost))))
        turns = first.model_turns
        if errors:
            moved = Incompatibility(before.version, after.version, _changes(before, after))
            return CallOutcome(after.name, self.era_version, after.version, prepared.arguments,
                               prepared.repairs, errors, relisted=True, incompatible=moved,
                               error=refused.error, sent=True, model_turns=turns,
                               attempts=attempts)
        reply, more = await self._send(after, prepared.arguments, meta)
        return CallOutcome(after.name, self.era_version, after.version, prepared.arguments,
                           prepared.repairs, relisted=True, result=reply.result,
                           error=reply.error, sent=True, model_turns=turns,
                           attempts=attempts + more)

    def _outcome(self, tool: CachedTool, prepared: _Prepared, reply: _Reply | None = None, *,
                 attempts: int = 0) -> CallOutcome:
        if reply is None:
            return CallOutcome(tool.name, self.era_version, tool.version, prepared.arguments,
                               prepared.repairs, prepared.errors,
                               model_turns=prepared.model_turns)
        return CallOutcome(tool.name, self.era_version, tool.version, prepared.arguments,
                           prepared.repairs, result=reply.result, error=reply.error, sent=True,
                           model_turns=prepared.model_turns, attempts=attempts)
