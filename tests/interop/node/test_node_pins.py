"""The Node side of the interop matrix installs exactly what ``package.json`` names: every pin is
an exact version (a range would let a fresh machine resolve something else), the committed lock
agrees with it (``npm ci`` refuses a lock out of step), and Node itself is the major the drivers
are written for."""

from __future__ import annotations

import json
import re
from pathlib import Path

from node_clients import NODE_MAJOR

_HERE = Path(__file__).parent


def test_every_node_pin_is_an_exact_version_that_the_lock_installs() -> None:
    pins: dict[str, str] = json.loads((_HERE / "package.json").read_text())["dependencies"]
    lock = json.loads((_HERE / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == pins
    for name, version in pins.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is pinned to {version!r}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name
    assert pins["node"].split(".")[0] == str(NODE_MAJOR)
