"""The wheel works: ``python -m build`` makes one from this checkout, it installs into a fresh
virtual environment (its dependencies from the package index), it holds every package data
file of the source tree, and ``toolkeeper serve --demo`` from that environment answers the
seed's ``payments.lookup`` call over HTTP."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from process_kit import keep_draining, read_until, stop_process

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "toolkeeper"
BUILD_TIMEOUT_S = 600
INSTALL_TIMEOUT_S = 600
START_TIMEOUT_S = 60
SEED_ARGUMENTS = {"reference": "PMT771", "include_legs": "yes", "urgent": True}
"""The README's hand-made call: three argument errors, sorted."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUILD_TIMEOUT_S + INSTALL_TIMEOUT_S + 120)]


def _data_files() -> set[str]:
    """Every file under src/toolkeeper that is not Python source or bytecode, as a path in
    the wheel."""
    return {f"toolkeeper/{path.relative_to(PACKAGE).as_posix()}"
            for path in PACKAGE.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")
            and "__pycache__" not in path.parts}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # a copy: the build writes egg-info and build/ beside the tree
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", ".*_cache",
        ".hypothesis", ".coverage", "node_modules"))
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(work / "dist"),
                    str(source)], check=True, timeout=BUILD_TIMEOUT_S,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wheels = sorted((work / "dist").glob("toolkeeper-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_every_package_data_file_of_the_source_tree(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    in_wheel = {name for name in names if name.startswith("toolkeeper/")
                and not name.endswith((".py", ".pyc"))}
    expected = _data_files()
    assert {"toolkeeper/py.typed", "toolkeeper/conformance/nginx/correct.conf",
            "toolkeeper/conformance/transcript.schema.json",
            "toolkeeper/demo/payments.lookup-1.0.0.json"} <= expected
    assert any(name.startswith("toolkeeper/conformance/transcripts/") for name in expected)
    assert in_wheel == expected
    sources = {f"toolkeeper/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*.py")
               if "__pycache__" not in p.parts}
    assert sources <= names


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _call(url: str, request_id: int, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": "payments.lookup", "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}
    response = httpx.post(url, json=body, timeout=30, headers={
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call", "mcp-name": "payments.lookup"})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_serve_demo_from_the_installed_wheel_answers_the_seed_call(
        wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TOOLKEEPER_REGISTRY")}
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   timeout=INSTALL_TIMEOUT_S, env=clean, cwd=tmp_path,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    where = subprocess.run([str(python), "-c", "import toolkeeper; print(toolkeeper.__file__)"],
                           check=True, capture_output=True, text=True, timeout=60, env=clean,
                           cwd=tmp_path).stdout.strip()
    assert Path(where).is_relative_to(env_dir)  # the wheel's copy, not this checkout
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.Popen([str(env_dir / "bin" / "toolkeeper"), "serve", "--demo", "--port",
                             str(_free_port())],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=tmp_path,
                            env={**clean, "HOME": str(home),
                                 "XDG_DATA_HOME": str(home / ".local" / "share")})
    try:
        assert proc.stderr is not None
        url = read_until(proc.stderr, re.compile(rb"toolkeeper gateway on (\S+)\n"),
                         START_TIMEOUT_S).group(1).decode()
        keep_draining(proc.stderr)
        seed = _call(url, 1, SEED_ARGUMENTS)["result"]
        assert seed["isError"] is True
        errors = seed["structuredContent"]["errors"]
        assert [e["path"] for e in errors] == ["$.include_legs", "$.reference", "$.urgent"]
        good = _call(url, 2, {"reference": "PMT-771"})["result"]
        assert good.get("isError") is not True
        assert (home / ".local" / "share" / "toolkeeper" / "registry.db").is_file()
    finally:
        stop_process(proc)
