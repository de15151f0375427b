"""Fixtures of the gateway tests: an in-memory registry holding the versioned test estate."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gateway_kit import calc_estate

from toolkeeper.registry import Registry


@pytest.fixture
def registry() -> Iterator[Registry]:
    registry = Registry.open("memory:")
    calc_estate(registry)
    yield registry
    registry.close()
