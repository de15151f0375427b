"""The Python clients of the interop matrix, each installed into its own virtualenv under the
interop cache (they pin different ``mcp`` releases, so they cannot share one; none reuses the
main venv) and driven by ``drivers/py_driver.py``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from interop_kit import OPS, ClientSpec, cached_dir, run_install

__all__ = ["PYTHON_CLIENTS", "PYTHON_PINS", "client_python"]

DRIVER = Path(__file__).resolve().parent / "drivers" / "py_driver.py"

# The one place the Python clients' versions are pinned: column label -> requirements.
# mcp 1.30.0 is the newest 1.x; fastmcp 4.2.3 needs mcp>=2.3.0,<3, pinned here to 2.3.0 too.
PYTHON_PINS: dict[str, tuple[str, ...]] = {
    "mcp 2.3.0": ("mcp==2.3.0",),
    "mcp 1.30.0": ("mcp==1.30.0",),
    "fastmcp 4.2.3": ("fastmcp==4.2.3", "mcp==2.3.0"),
}
_ALL_MODES = ("auto", "legacy", "2026-07-28")
_TRANSPORTS = ("http", "stdio")


def _build_venv(target: Path, requirements: tuple[str, ...]) -> None:
    run_install([sys.executable, "-m", "venv", str(target)], timeout=180)
    run_install([str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-input",
                 "--disable-pip-version-check", *requirements])


def client_python(requirements: tuple[str, ...], cache: Path) -> list[str]:
    """The interpreter of the cached virtualenv holding ``requirements`` (installed on first
    use), isolated: nothing from the caller's environment (PYTHONPATH, user site) leaks in."""
    pins = "-".join(requirement.replace("==", "-") for requirement in requirements)
    key = f"py{sys.version_info.major}{sys.version_info.minor}-{pins}"
    venv = cached_dir(cache, key, lambda target: _build_venv(target, requirements))
    return [str(venv / "bin" / "python"), "-I"]


def _venv_driver(requirements: tuple[str, ...]) -> Callable[[Path], list[str]]:
    def prepare(cache: Path) -> list[str]:
        return [*client_python(requirements, cache), str(DRIVER)]

    return prepare


PYTHON_CLIENTS: list[ClientSpec] = [
    ClientSpec("mcp 2.3.0", _ALL_MODES, _TRANSPORTS, OPS, _venv_driver(PYTHON_PINS["mcp 2.3.0"])),
    # 1.x speaks the initialize handshake only (2025-11-25): legacy is its one mode.
    ClientSpec("mcp 1.30.0", ("legacy",), _TRANSPORTS, OPS, _venv_driver(PYTHON_PINS["mcp 1.30.0"])),
    # call_pinned goes through FastMCP's own pin, call_tool(version=...) -> _meta.fastmcp.version.
    ClientSpec("fastmcp 4.2.3", _ALL_MODES, _TRANSPORTS, OPS,
               _venv_driver(PYTHON_PINS["fastmcp 4.2.3"])),
]
