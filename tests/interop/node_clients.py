"""The Node side of the interop matrix: the TypeScript SDK v1 and v2 clients and the MCP Inspector's
CLI, each run by a driver under ``tests/interop/node/`` on Node 22.

Every version is pinned once, in ``node/package.json`` (Node itself is the ``node`` package there;
the machine's own node is not used), and ``node/package-lock.json`` fixes the whole tree, so
``npm ci`` installs the same bytes everywhere. The install lives in the shared interop cache under a
key derived from those two files, so changing a pin installs afresh; the drivers are copied beside
it (they resolve their imports from its ``node_modules``) under a key derived from their own text.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from interop_kit import OPS, ClientSpec, InstallError, cached_dir, run_install

__all__ = ["NODE_CLIENTS", "NODE_MAJOR", "install_node_clients"]

NODE_MAJOR = 22
_HERE = Path(__file__).parent / "node"
_PACKAGE_FILES = ("package.json", "package-lock.json")
_SDK_V1 = "@modelcontextprotocol/sdk"
_CLIENT_V2 = "@modelcontextprotocol/client"
_INSPECTOR = "@modelcontextprotocol/inspector"


def _digest(paths: list[Path]) -> str:
    hasher = hashlib.sha256()
    for path in paths:
        hasher.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()[:16]


def _pins() -> dict[str, str]:
    pins: dict[str, str] = json.loads((_HERE / "package.json").read_text())["dependencies"]
    return pins


def _install(target: Path) -> None:
    target.mkdir(parents=True)
    for name in _PACKAGE_FILES:
        shutil.copyfile(_HERE / name, target / name)
    run_install(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target)
    node = target / "node_modules" / ".bin" / "node"
    try:
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30,
                                 check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise InstallError(f"npm ci in {target} left no runnable Node: {exc}") from None
    if not version.startswith(f"v{NODE_MAJOR}."):
        raise InstallError(f"npm ci in {target} installed Node {version}, not {NODE_MAJOR}.x")


def _copy_drivers(target: Path) -> None:
    target.mkdir(parents=True)
    for driver in sorted(_HERE.glob("*.mjs")):
        shutil.copyfile(driver, target / driver.name)


def install_node_clients(cache: Path) -> Path:
    """The ``npm ci`` of ``node/`` in ``cache`` (Node 22 and every Node client), built once."""
    return cached_dir(cache, f"node-{_digest([_HERE / name for name in _PACKAGE_FILES])}", _install)


def _prepare(driver: str) -> Callable[[Path], list[str]]:
    def prepare(cache: Path) -> list[str]:
        install = install_node_clients(cache)
        drivers = cached_dir(install, f"drivers-{_digest(sorted(_HERE.glob('*.mjs')))}", _copy_drivers)
        return [str(install / "node_modules" / ".bin" / "node"), str(drivers / driver)]

    return prepare


_PIN = _pins()

NODE_CLIENTS: list[ClientSpec] = [
    # v1 speaks only the 2025 handshake era.
    ClientSpec(
        name=f"{_SDK_V1} {_PIN[_SDK_V1]}",
        modes=("legacy",),
        transports=("http", "stdio"),
        ops=OPS,
        prepare=_prepare("sdk_v1_driver.mjs"),
    ),
    # v2 picks the era with ClientOptions.versionNegotiation.mode ("legacy" | "auto" | {pin}). Two
    # specs under one name because its ops differ by era: in a 2026-07-28 session ping() never leaves
    # the client (an SdkError "not supported by the negotiated protocol version": the era removed
    # ping, and v2 gates every spec method by era before the transport), so ping is left out there.
    ClientSpec(
        name=f"{_CLIENT_V2} {_PIN[_CLIENT_V2]}",
        modes=("legacy",),
        transports=("http", "stdio"),
        ops=OPS,
        prepare=_prepare("client_v2_driver.mjs"),
    ),
    ClientSpec(
        name=f"{_CLIENT_V2} {_PIN[_CLIENT_V2]}",
        modes=("auto", "2026-07-28"),
        transports=("http", "stdio"),
        ops=tuple(op for op in OPS if op != "ping"),
        prepare=_prepare("client_v2_driver.mjs"),
    ),
    # The Inspector's CLI runs one method per process (--protocol-era legacy|modern), so:
    # - no call_unknown: `--method tools/call` looks the name up in its own tools/list first and exits
    #   5 `tool_not_found` without sending tools/call, so the server's answer is never seen;
    # - no ping: not among the CLI's methods;
    # - no call_after: every op is a fresh process and session, so "the session survived the errors"
    #   cannot be observed.
    # Its JSON output shows neither the negotiated version nor a JSON-RPC error's code and data (the
    # error envelope carries the message only), so `era` and call_retired's code/data are null.
    # "auto" is left out for time: every op is a CLI start (about 1 s, 2 s with a stdio server).
    ClientSpec(
        name=f"{_INSPECTOR} {_PIN[_INSPECTOR]} (--cli)",
        modes=("legacy", "2026-07-28"),
        transports=("http", "stdio"),
        ops=("list", "call_valid", "call_invalid", "call_retired", "call_pinned", "call_output"),
        prepare=_prepare("inspector_cli_driver.mjs"),
    ),
]
