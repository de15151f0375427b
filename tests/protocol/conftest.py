"""Fixtures of the protocol tests (helpers live in ``kernel_kit``)."""

from __future__ import annotations

import pytest
from kernel_kit import build_kernel

from toolkeeper.protocol import ServerKernel


@pytest.fixture
def kernel() -> ServerKernel:
    return build_kernel()
