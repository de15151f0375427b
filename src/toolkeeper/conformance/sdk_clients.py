"""The real SDK clients an SDK diff runs (SPEC 5.4), found where they are installed, and the
one way of running one: its driver (package data in ``sdk_drivers/``) in a subprocess, one
JSON line back.

:data:`SDKS` is the table: ``python`` is the official ``mcp`` package in the interpreter running
toolkeeper; ``python1`` the newest 1.x in the interop cache's virtualenvs; ``typescript`` the
TypeScript SDK's client (``@modelcontextprotocol/client``) with the Node 22 the interop cache
installed beside it (``tests/interop/node_clients.py`` installs both; the cache is
``$TOOLKEEPER_INTEROP_CACHE`` or ``~/.cache/toolkeeper-interop``); ``toolkeeper`` this
package's own client (:mod:`toolkeeper.client`) in the interpreter running toolkeeper, always
there. Nothing is installed here: an SDK that is absent is reported with the reason by
:func:`locate`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from toolkeeper.contracts.redaction import redact_text

__all__ = ["SDKS", "Located", "cache_root", "locate", "run_driver"]

_DRIVER_TIMEOUT_S: Final = 60.0
_TS_PACKAGE: Final = "@modelcontextprotocol/client"
_NODE_MAJOR: Final = 22


def cache_root() -> Path:
    configured = os.environ.get("TOOLKEEPER_INTEROP_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "toolkeeper-interop"


def _driver(name: str) -> str:
    return str(resources.files("toolkeeper.conformance").joinpath("sdk_drivers", name))


@dataclass(frozen=True)
class Located:
    """An SDK found (``argv``: the driver's command prefix) or not (``reason`` says why)."""

    sdk: str
    argv: tuple[str, ...] = ()
    reason: str | None = None


def _python() -> Located:
    if importlib.util.find_spec("mcp") is None:
        return Located("python", reason="the mcp package is not installed in this interpreter")
    return Located("python", (sys.executable, "-I", _driver("sdk_driver.py")))


def _toolkeeper() -> Located:
    return Located("toolkeeper", (sys.executable, "-I", _driver("toolkeeper_driver.py")))


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.name.split("-mcp-", 1)[-1]))


def _python1() -> Located:
    venvs = sorted((p for p in cache_root().glob("py*-mcp-1.*")
                    if (p / "bin" / "python").is_file()), key=_version_key)
    if not venvs:
        return Located("python1", reason=f"no mcp 1.x virtualenv in the interop cache "
                       f"({cache_root()}); tests/interop installs one")
    return Located("python1", (str(venvs[-1] / "bin" / "python"), "-I",
                               _driver("sdk_driver.py")))


def _typescript() -> Located:
    for install in sorted(cache_root().glob("node-*")):
        modules = install / "node_modules"
        node = modules / ".bin" / "node"
        if (modules / _TS_PACKAGE / "package.json").is_file() and node.is_file():
            try:
                version = subprocess.run([str(node), "--version"], capture_output=True,
                                         text=True, timeout=30, check=True).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                continue
            if version.startswith(f"v{_NODE_MAJOR}."):
                return Located("typescript", (str(node), _driver("sdk_driver.mjs"),
                                              "--node-modules", str(modules)))
    return Located("typescript", reason=f"no Node {_NODE_MAJOR} with {_TS_PACKAGE} in the "
                   f"interop cache ({cache_root()}); tests/interop installs it")


SDKS: Final[dict[str, Callable[[], Located]]] = {
    "python": _python,
    "python1": _python1,
    "typescript": _typescript,
    "toolkeeper": _toolkeeper,
}
"""SDK name (the CLI's ``--sdk``) -> how to find it."""


def locate(sdk: str) -> Located:
    return SDKS[sdk]()


def run_driver(located: Located, url: str, mode: str, method: str, tool: str,
               arguments: Any, *, manual_input: bool = False) -> dict[str, Any]:
    """One request through the SDK: the driver's JSON object, or an ``exception`` outcome of
    type ``DriverFailure`` when it printed none (crashed, or overran its time).
    ``manual_input``: the answer is ``input_required``, taken through the SDK's manual path."""
    argv = [*located.argv, "--url", url, "--mode", mode, "--method", method, "--tool", tool,
            "--arguments", json.dumps(arguments), *(["--manual-input"] if manual_input else [])]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=_DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    lines = [line for line in out.splitlines() if line.strip()]
    try:
        parsed = json.loads(lines[-1])
        if isinstance(parsed, dict):
            return parsed
    except (IndexError, ValueError):
        pass
    tail = redact_text(" ".join(err.split())[-300:])
    return {"outcome": "exception", "sdk": located.sdk, "era": None,
            "exception": {"type": "DriverFailure", "code": None,
                          "message": f"exit {proc.returncode}: {tail}"}}
