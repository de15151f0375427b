"""Retries of transient failures, only where the side effect allows (SPEC 1.1, 4).

A transient failure is one of :data:`TRANSIENT`: the answer timed out, the connection was
refused or lost, or the server said 503. Whether the call may have run is unknown, so a second
attempt is made only when running it twice is harmless: ``RETRYABLE[side_effect]``. A
non-idempotent write (``write``, ``destructive``) gets exactly one attempt, and its failure is
the caller's to judge.

A server with toolkeeper contracts states the side effect through the annotations its
descriptors derive from it (SPEC 1.1). For any other server the annotations are read the same
way, conservatively: MCP's defaults are ``readOnlyHint: false``, ``destructiveHint: true``,
``idempotentHint: false``, so a tool without annotations is destructive and never retried; a
hint that is not a boolean counts as absent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from toolkeeper.contracts.spec import RETRYABLE, SideEffect
from toolkeeper.errors import ClientConnectionError, ClientTimeoutError, ServerUnavailableError

__all__ = ["HINT_DEFAULTS", "SIDE_EFFECT_BY_HINTS", "TRANSIENT", "RetryPolicy", "side_effect_of"]

T = TypeVar("T")

TRANSIENT: tuple[type[Exception], ...] = (
    ClientTimeoutError, ClientConnectionError, ServerUnavailableError)
"""The failures after which a call may or may not have run."""

HINT_DEFAULTS: Mapping[str, bool] = MappingProxyType(
    {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False})
"""MCP's defaults for absent hints (mcp-wire 7.1)."""

# (readOnlyHint, destructiveHint, idempotentHint) -> side effect: every combination is a row.
# A read-only tool is a read whatever else it says; then destructive wins over idempotent.
SIDE_EFFECT_BY_HINTS: Mapping[tuple[bool, bool, bool], SideEffect] = MappingProxyType({
    (True, True, True): SideEffect.READ,
    (True, True, False): SideEffect.READ,
    (True, False, True): SideEffect.READ,
    (True, False, False): SideEffect.READ,
    (False, True, True): SideEffect.DESTRUCTIVE,
    (False, True, False): SideEffect.DESTRUCTIVE,
    (False, False, True): SideEffect.IDEMPOTENT_WRITE,
    (False, False, False): SideEffect.WRITE,
})


def _hint(annotations: Any, key: str) -> bool:
    value = annotations.get(key) if isinstance(annotations, dict) else None
    return value if isinstance(value, bool) else HINT_DEFAULTS[key]


def side_effect_of(descriptor: Mapping[str, Any]) -> SideEffect:
    """The side effect a descriptor's annotations imply (absent or malformed: MCP's defaults,
    which make a tool destructive)."""
    annotations = descriptor.get("annotations")
    return SIDE_EFFECT_BY_HINTS[(_hint(annotations, "readOnlyHint"),
                                 _hint(annotations, "destructiveHint"),
                                 _hint(annotations, "idempotentHint"))]


async def _no_wait(delay: float) -> None:
    return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most ``attempts`` tries of a retryable call, waiting ``delays[i]`` seconds before
    try ``i + 2`` (the last delay repeats). ``sleep`` is injectable so tests never wait."""

    attempts: int = 3
    delays: tuple[float, ...] = (0.1, 0.5)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @classmethod
    def never(cls) -> RetryPolicy:
        return cls(attempts=1, delays=(), sleep=_no_wait)

    def allows(self, side_effect: SideEffect) -> bool:
        return self.attempts > 1 and RETRYABLE[side_effect]

    async def run(self, send: Callable[[], Awaitable[T]], side_effect: SideEffect
                  ) -> tuple[T, int]:
        """``send()`` until it answers, retrying a :data:`TRANSIENT` failure while the side
        effect and the attempt budget allow; returns the answer and the attempts made. The last
        failure propagates."""
        attempts = self.attempts if RETRYABLE[side_effect] else 1
        tried = 0
        while True:
            tried += 1
            try:
                return await send(), tried
            except TRANSIENT:
                if tried >= attempts:
                    raise
            if self.delays:
                await self.sleep(self.delays[min(tried - 1, len(self.delays) - 1)])
