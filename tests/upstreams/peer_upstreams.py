"""MCP servers nobody here wrote, as upstreams of a gateway (issue 22, acceptance 1): each
:class:`PeerUpstream` says how a test starts it on 127.0.0.1 (over Streamable HTTP, announcing
its port, or as the stdio command the gateway runs), which of its tools a caller calls with
what, and the text that call must answer. The servers are the conformance panel's (``mcp`` 1.x,
FastMCP, the TypeScript SDK 1.x), ``@modelcontextprotocol/server-everything`` and this
directory's official-SDK fixture, each installed through the shared ``peers`` fixture.

:func:`served_upstream` imports one with ``toolkeeper upstream add`` and ``upstream sync``
(the command line, in process, on a SQLite registry) and serves that registry with
``toolkeeper serve`` (a subprocess, stopped by its pid, in a directory of its own: once it
has stopped, no process started in that directory, a stdio upstream, may be left running)."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from node_clients import NODE_CLIENTS
from python_clients import PYTHON_PINS

from peer_kit import EVERYTHING_VERSION, Peers
from process_kit import serving_announced_port, serving_gateway
from toolkeeper.cli.main import cli
from toolkeeper.registry import Registry
from toolkeeper.upstreams.connections import open_session
from toolkeeper.upstreams.governance import Upstreams

__all__ = ["PEER_UPSTREAMS", "PeerUpstream", "Served", "served_upstream"]

TESTS = Path(__file__).resolve().parents[1]
PANEL = TESTS / "conformance"
SDK_FIXTURE = Path(__file__).resolve().parent / "sdk_upstream.py"
TS_SDK_V1 = next(c.name for c in NODE_CLIENTS if c.name.startswith("@modelcontextprotocol/sdk "))
MCP1 = "mcp 1.30.0"
FASTMCP = "fastmcp 4.2.3"
SESSION_S = 30
LOOKUP = ("lookup", {"reference": "PMT-771"}, "payment PMT-771")


def _python(label: str) -> Callable[[Peers], list[str]]:
    return lambda peers: peers.python_client(PYTHON_PINS[label])


def _this_python(peers: Peers) -> list[str]:
    return [sys.executable]


def _ts_v1(peers: Peers) -> list[str]:
    """Node of the kit's install and the panel's server script placed inside that install (so
    its imports resolve from the install's ``node_modules``)."""
    install = peers.node_clients()
    script = PANEL / "ts_sdk_v1_panel_server.mjs"
    placed = install / "upstream-peers" / script.name
    placed.parent.mkdir(exist_ok=True)
    if not placed.exists() or placed.read_bytes() != script.read_bytes():
        shutil.copyfile(script, placed)
    return [str(install / "node_modules" / ".bin" / "node"), str(placed)]


def _everything(peers: Peers) -> list[str]:
    root = peers.everything()
    return [str(root / "node_modules" / ".bin" / "node"),
            str(root / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" /
                "index.js")]


@dataclass(frozen=True)
class PeerUpstream:
    """One upstream server kind: ``label`` (the library and its version), ``transport``,
    ``argv`` (the interpreter or node, then the script: given the installed peers), the
    argument that selects the transport, and the tool a caller calls."""

    label: str
    transport: str
    argv: Callable[[Peers], list[str]]
    script: Sequence[str]
    tool: str
    arguments: dict[str, Any]
    answer: str

    @property
    def id(self) -> str:
        name = self.label.replace("@modelcontextprotocol/", "").replace(" ", "-")
        return f"{name}-{self.transport}"

    def command(self, peers: Peers) -> list[str]:
        return [*self.argv(peers), *self.script]


def _kind(label: str, transport: str, argv: Callable[[Peers], list[str]], script: Sequence[str],
          call: tuple[str, dict[str, Any], str] = LOOKUP) -> PeerUpstream:
    return PeerUpstream(label, transport, argv, tuple(script), *call)


PEER_UPSTREAMS: list[PeerUpstream] = [
    _kind("mcp 2.3.0 (MCPServer)", "http", _this_python, [str(SDK_FIXTURE), "http"],
          ("echo", {"text": "hi"}, "hi")),
    _kind("mcp 2.3.0 (MCPServer)", "stdio", _this_python, [str(SDK_FIXTURE), "stdio"],
          ("echo", {"text": "hi"}, "hi")),
    _kind(f"{MCP1} (FastMCP)", "http", _python(MCP1), [str(PANEL / "mcp1_panel_server.py"),
                                                      "http"]),
    _kind(FASTMCP, "http", _python(FASTMCP), [str(PANEL / "fastmcp_panel_server.py"), "http"]),
    _kind(FASTMCP, "stdio", _python(FASTMCP), [str(PANEL / "fastmcp_panel_server.py"), "stdio"]),
    _kind(f"@modelcontextprotocol/server-everything {EVERYTHING_VERSION}", "stdio", _everything,
          ["stdio"], ("echo", {"message": "hi"}, "Echo: hi")),
    _kind(f"{TS_SDK_V1} (McpServer)", "http", _ts_v1, []),
]


@dataclass(frozen=True)
class Served:
    """A gateway serving one imported upstream: its URL, the upstream's own URL (HTTP) or
    command (stdio), the sync's JSON report and the exposed names it imported."""

    kind: PeerUpstream
    gateway: str
    upstream: str
    report: dict[str, Any]
    prefix: str
    upstream_era: str
    """The protocol version the gateway's own client selects with the upstream."""
    descriptors: dict[str, dict[str, Any]]
    """Each imported tool's descriptor as the upstream served it, by exposed name."""

    @property
    def imported(self) -> list[str]:
        return sorted(t["exposed"] for t in self.report["tools"] if t["action"] == "imported")


def _cli(registry: str, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["upstream", *args, "--registry", registry, "--json"])
    assert result.exit_code == 0, (args, result.exit_code, result.stdout)
    out: dict[str, Any] = json.loads(result.stdout)
    return out


@contextmanager
def served_upstream(kind: PeerUpstream, peers: Peers, workdir: Path) -> Iterator[Served]:
    registry = f"sqlite://{workdir / 'registry.db'}"
    prefix = "up."
    with ExitStack() as stack:
        command = kind.command(peers)
        if kind.transport == "http":
            where = stack.enter_context(serving_announced_port(command))
            _cli(registry, "add", "up", "--url", where, "--prefix", prefix,
                 "--side-effect", "read")
        else:
            where = shlex.join(command)
            _cli(registry, "add", "up", "--command", where, "--prefix", prefix,
                 "--side-effect", "read")
        report = _cli(registry, "sync", "up")
        era = asyncio.run(_upstream_version(registry))
        with Registry.open(registry) as reg:
            descriptors = {row.exposed: dict(row.descriptor) for row in Upstreams(reg).tools("up")}
        home = workdir / "gateway"  # the gateway's cwd, so its children's too
        home.mkdir()
        with serving_gateway(["--registry", registry, "--port", "0", "--log-level", "warning"],
                             cwd=home) as url:
            yield Served(kind, url, where, report, prefix, era, descriptors)
        left = processes_in(home)
        assert not left, f"processes the gateway started outlived it: {left}"


def processes_in(cwd: Path) -> list[str]:
    """The live processes (no zombies: they have no cwd) whose working directory is ``cwd``,
    as ``pid argv``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "cwd").resolve(strict=True) != cwd.resolve():
                continue
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(f"{proc.name} {argv.strip()}")
    return sorted(found)


async def _upstream_version(registry: str) -> str:
    """The version the gateway's client (``open_session``: the era selection the sync and the
    forwarding use) selects with the stored upstream ``up``."""
    with Registry.open(registry) as reg:
        defn = Upstreams(reg).definition("up")
    async with asyncio.timeout(SESSION_S), await open_session(defn) as session:
        return session.version
