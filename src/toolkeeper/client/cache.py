"""The kernel's tool cache: what was listed on one connection, ready for calls (SPEC 4).

A listing is kept as :class:`CachedTool` entries: the raw descriptor as listed, the
``_meta.schemaVersion`` it publishes (a string, else None: never invented), the side effect its
annotations imply (:func:`~toolkeeper.client.retry.side_effect_of`) and its input schema
compiled once. A schema that is not self-contained (an external or unresolvable ``$ref``, a
reference cycle) is kept with the reason (:attr:`CachedTool.schema_problem`): the kernel refuses
to call it, since it cannot judge the arguments and the schema would have it fetch a document.
Any other schema the contracts engine cannot compile is kept without a validator: the kernel
then sends arguments as given and the server judges them.

Freshness (modern era, mcp-wire 7.6): a listing is fresh for ``ttlMs`` after it arrived
(0 = stale at once; negative floored to 0; capped at 24 h as the SDK does). The legacy era has
no hints: a listing stays until ``notifications/tools/list_changed`` or a re-list refusal drops
it. Staleness governs :meth:`~toolkeeper.client.kernel.Kernel.tools`; a call uses the listing it
has (stale or not) and lists only when there is none, because its pinned ``schemaVersion`` lets
a versioned server refuse a stale contract, which the kernel answers by re-listing once.

``cacheScope`` decides who else may reuse a listing: with a :class:`SharedListings` store,
``public`` listings are shared by every connection to the same endpoint and ``private`` ones
only by connections with the same credential (keyed by its SHA-256, never the credential).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolkeeper.client.retry import side_effect_of
from toolkeeper.contracts.spec import SideEffect
from toolkeeper.contracts.validate import CompiledSchema, compile_schema
from toolkeeper.errors import SchemaError

__all__ = [
    "MAX_TTL_MS", "CachedTool", "Listing", "SharedListings", "ToolCache", "cached_tool",
    "credential_key",
]

MAX_TTL_MS = 24 * 60 * 60 * 1000
PUBLIC = "public"


@dataclass(frozen=True, slots=True)
class CachedTool:
    """One listed tool, ready for calls."""

    name: str
    descriptor: Mapping[str, Any]
    version: str | None
    side_effect: SideEffect
    compiled: CompiledSchema | None
    schema_problem: SchemaError | None = None
    """Why the input schema is not self-contained (a ``schema.ref_*`` code and the path of
    the reference), or None."""

    @property
    def input_schema(self) -> dict[str, Any] | None:
        schema = self.descriptor.get("inputSchema")
        return schema if isinstance(schema, dict) else None


def _version(descriptor: Mapping[str, Any]) -> str | None:
    meta = descriptor.get("_meta")
    version = meta.get("schemaVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _compiled(descriptor: Mapping[str, Any]) -> tuple[CompiledSchema | None, SchemaError | None]:
    schema = descriptor.get("inputSchema")
    if not isinstance(schema, dict):
        return None, None
    try:
        return compile_schema(schema), None
    except SchemaError as exc:
        return None, exc if exc.code.startswith("schema.ref_") else None


def cached_tool(descriptor: Mapping[str, Any]) -> CachedTool:
    """The cache entry of one descriptor (its name must be a string)."""
    compiled, problem = _compiled(descriptor)
    return CachedTool(str(descriptor.get("name")), descriptor, _version(descriptor),
                      side_effect_of(descriptor), compiled, problem)


@dataclass(frozen=True, slots=True)
class Listing:
    """One complete listing: entries by name, in the server's order, and when it goes stale
    (``time.monotonic()`` seconds; None = never, until dropped)."""

    tools: Mapping[str, CachedTool]
    stale_at: float | None
    scope: str | None

    def fresh(self, now: float) -> bool:
        return self.stale_at is None or now < self.stale_at


def _stale_at(ttl_ms: int | None, now: float) -> float | None:
    if ttl_ms is None:
        return None
    return now + min(max(ttl_ms, 0), MAX_TTL_MS) / 1000.0


class SharedListings:
    """Listings several connections may reuse, keyed by endpoint and, for ``private`` ones,
    the credential's digest (``cacheScope``, mcp-wire 7.6)."""

    def __init__(self) -> None:
        self._listings: dict[tuple[str, str], Listing] = {}

    def get(self, endpoint: str, credential: str, now: float) -> Listing | None:
        for key in ((endpoint, credential), (endpoint, PUBLIC)):
            found = self._listings.get(key)
            if found is not None and found.fresh(now):
                return found
        return None

    def put(self, endpoint: str, credential: str, listing: Listing) -> None:
        key = (endpoint, PUBLIC if listing.scope == PUBLIC else credential)
        self._listings[key] = listing

    def drop(self, endpoint: str, credential: str) -> None:
        for key in ((endpoint, credential), (endpoint, PUBLIC)):
            self._listings.pop(key, None)


def credential_key(token: str | None) -> str:
    """How a private listing is keyed: the credential's SHA-256 (``anonymous`` without one)."""
    if token is None:
        return "anonymous"
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


class ToolCache:
    """The listing of one connection. ``modern``: whether ``ttlMs``/``cacheScope`` apply."""

    def __init__(self, *, modern: bool, endpoint: str = "", token: str | None = None,
                 shared: SharedListings | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._modern = modern
        self._endpoint = endpoint
        self._credential = credential_key(token)
        self._shared = shared
        self._clock = clock
        self._listing: Listing | None = None
        self.generation = 0
        """Counts the listings stored; a call compares it to know whether it listed."""

    @property
    def listing(self) -> Listing | None:
        """The current listing, or one a shared store holds fresh for this connection."""
        if self._listing is None and self._shared is not None:
            self._listing = self._shared.get(self._endpoint, self._credential, self._clock())
        return self._listing

    def fresh(self) -> bool:
        listing = self.listing
        return listing is not None and listing.fresh(self._clock())

    def get(self, name: str) -> CachedTool | None:
        listing = self.listing
        return listing.tools.get(name) if listing is not None else None

    def store(self, descriptors: Iterable[Mapping[str, Any]], ttl_ms: int | None,
              cache_scope: str | None) -> Listing:
        """Replace the listing with a new one (descriptors without a string name are left
        out: no call could name them)."""
        now = self._clock()
        tools = {str(d["name"]): cached_tool(d) for d in descriptors
                 if isinstance(d.get("name"), str)}
        modern = self._modern
        listing = Listing(tools, _stale_at(ttl_ms if modern else None, now),
                          cache_scope if modern else None)
        self._listing = listing
        self.generation += 1
        if self._shared is not None and modern and ttl_ms is not None and ttl_ms > 0:
            self._shared.put(self._endpoint, self._credential, listing)
        return listing

    def invalidate(self) -> None:
        """Drop the listing (``tools/list_changed``, a re-list refusal): the next use lists."""
        self._listing = None
        if self._shared is not None:
            self._shared.drop(self._endpoint, self._credential)
