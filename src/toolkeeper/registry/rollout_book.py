"""The registry's rollouts (docs/rollouts.md): the one place rollout records are read and
written, on every backend, so every replica routes the same way.

(Interface fixed; storage being built: :meth:`RolloutBook.routing` is what the gateway's call
path reads.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from toolkeeper.registry.rollouts import Rollout, RolloutDecision

if TYPE_CHECKING:
    from toolkeeper.registry.registry import Registry

__all__ = ["RolloutBook", "rollout_book"]


class RolloutBook:
    """The rollouts of one registry."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    def routing(self) -> Mapping[str, Rollout]:
        """The rollouts the call path honours, by tool: those running, paused or halted.
        Cached per registry generation (a rollout change moves the generation)."""
        return {}

    def get(self, tool: str) -> Rollout | None:
        """The tool's rollout that is not over, else its most recent one, else None."""
        raise NotImplementedError

    def start(self, rollout: Rollout) -> Rollout:
        raise NotImplementedError

    def update(self, rollout: Rollout, *, expected_seq: int) -> Rollout:
        raise NotImplementedError

    def record_decision(self, decision: RolloutDecision) -> None:
        raise NotImplementedError

    def history(self, tool: str) -> tuple[tuple[Rollout, tuple[RolloutDecision, ...]], ...]:
        raise NotImplementedError

    @contextmanager
    def evaluation_lock(self) -> Iterator[bool]:
        """Whether this process may evaluate rollouts now (one replica at a time)."""
        raise NotImplementedError
        yield False


def rollout_book(registry: Registry) -> RolloutBook:
    return RolloutBook(registry)
