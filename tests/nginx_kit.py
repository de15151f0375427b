"""Whether a test that needs nginx runs: absent nginx is a skip on a workstation and a failure
under CI (``.ci/run`` installs it, so its absence there is a broken pipeline)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import pytest

from toolkeeper.conformance import find_nginx

__all__ = ["require_nginx"]


def require_nginx(find: Callable[[], str | None] = find_nginx,
                  env: Mapping[str, str] | None = None) -> str:
    """The nginx binary; else ``pytest.fail`` when ``CI`` is set, ``pytest.skip`` when not."""
    binary = find()
    if binary is None:
        if (os.environ if env is None else env).get("CI"):
            pytest.fail("nginx is required under CI (.ci/run installs Debian's nginx)")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    return binary
