"""The interop matrix's framework: which clients exist (``ClientSpec``), the operations every
driver runs against the demo estate (``OPS``, ``TOOL_CALLS``), what the spec expects of each
(``EXPECTED``, ``judge``), the runner that invokes a driver and parses its one JSON line, the
install cache, and the ``docs/compatibility.md`` writer.

Stdlib only: ``drivers/py_driver.py`` loads this file by path inside each client's own
virtualenv (where toolkeeper and pytest are not installed) to read ``OPS`` and ``TOOL_CALLS``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "EXPECTED",
    "MODERN_ERA",
    "OPS",
    "TOOL_CALLS",
    "UPSTREAM_HEAD",
    "ClientSpec",
    "DriverError",
    "Expect",
    "InstallError",
    "cache_root",
    "cached_dir",
    "cell_row",
    "code_hidden",
    "expected_era",
    "hand_written",
    "judge",
    "judge_run",
    "locked",
    "parse_rows",
    "parse_upstream_rows",
    "render_doc",
    "row_key",
    "run_driver",
    "run_install",
    "summarize",
]


@dataclass(frozen=True)
class ClientSpec:
    name: str                      # stable column label, e.g. "mcp 1.27.0",
                                   # "@modelcontextprotocol/sdk 1.32.2"
    modes: tuple[str, ...]         # "auto", "legacy", "2026-07-28" (what the client can be asked to speak)
    transports: tuple[str, ...]    # "http", "stdio"
    ops: tuple[str, ...]           # subset of OPS this client can exercise through its API
    prepare: Callable[[Path], list[str]]  # given the shared cache dir, installs (idempotent,
                                          # cached) and returns the driver's argv prefix


OPS: tuple[str, ...] = ("list", "call_valid", "call_invalid", "call_unknown", "call_retired",
                        "call_pinned", "call_output", "ping", "call_after")

LEGACY_ERA = "2025-11-25"
MODERN_ERA = "2026-07-28"
DEMO_TOOLS = ("payments.lookup", "db.query", "tickets.create")
_VALID_LOOKUP: dict[str, Any] = {"tool": "payments.lookup",
                                 "arguments": {"reference": "PMT-771", "include_legs": True}}

# The tools/call request of each call op: the tool, its arguments, and the request's _meta (or
# None). ``call_pinned`` may be sent by a client's own pinning API instead (FastMCP's
# ``version=`` puts ``_meta.fastmcp.version``, which the gateway honours as ``schemaVersion``).
TOOL_CALLS: dict[str, dict[str, Any]] = {
    "call_valid": {**_VALID_LOOKUP, "meta": None},
    "call_invalid": {"tool": "payments.lookup", "meta": None,
                     "arguments": {"reference": "PMT771", "include_legs": "yes", "urgent": True}},
    "call_unknown": {"tool": "no.such.tool", "arguments": {}, "meta": None},
    "call_retired": {"tool": "db.query", "arguments": {"sql": "select 1", "timeout_ms": 5},
                     "meta": {"schemaVersion": "3.0.0"}},
    "call_pinned": {"tool": "db.query", "arguments": {"sql": "select 1", "timeout": 5},
                    "meta": {"schemaVersion": "4.0.0"}},
    "call_output": {"tool": "tickets.create", "arguments": {"title": "printer on fire"}, "meta": None},
    "call_after": {**_VALID_LOOKUP, "meta": None},
}


@dataclass(frozen=True)
class Expect:
    """What one op's driver output must show. Unset fields are not judged."""

    outcome: str                                   # "result" | "error"
    is_error: bool | None = None                   # the result's isError
    code: int | None = None                        # the JSON-RPC error code
    data: tuple[tuple[str, str], ...] = ()         # error data members that must be present
    tools: tuple[str, ...] = ()                    # names tools/list must include
    structured: bool = False                       # the result carries structuredContent

    def describe(self) -> str:
        parts = [self.outcome]
        if self.code is not None:
            parts.append(str(self.code))
        parts += [f"data.{key}={value}" for key, value in self.data]
        if self.is_error is not None:
            parts.append(f"isError={str(self.is_error).lower()}")
        if self.tools:
            parts.append("tools include " + ", ".join(self.tools))
        if self.structured:
            parts.append("structuredContent")
        return " ".join(parts)


_RESULT_OK = Expect("result", is_error=False)
EXPECTED: dict[str, Expect] = {
    "list": Expect("result", tools=DEMO_TOOLS),
    "call_valid": _RESULT_OK,
    "call_invalid": Expect("result", is_error=True),
    "call_unknown": Expect("error", code=-32602),
    "call_retired": Expect("error", code=-32602,
                           data=(("reason", "schema_version_retired"), ("action", "relist"))),
    "call_pinned": _RESULT_OK,
    "call_output": Expect("result", is_error=False, structured=True),
    "ping": Expect("result"),
    "call_after": _RESULT_OK,
}
# 2026-07-28 removed ping (SEP-2575): a modern server answers it "method not found".
_ERA_OVERRIDES: dict[str, dict[str, Expect]] = {MODERN_ERA: {"ping": Expect("error", code=-32601)}}
# The era a mode must negotiate with this gateway (it speaks both; "auto" must find the newer).
_MODE_ERAS: dict[str, str] = {"auto": MODERN_ERA, MODERN_ERA: MODERN_ERA, "legacy": LEGACY_ERA}


def expected_era(mode: str) -> str:
    return _MODE_ERAS[mode]


def code_hidden(got: Mapping[str, Any]) -> bool:
    """The client surfaced a JSON-RPC error but its API shows neither code nor data."""
    return got.get("outcome") == "error" and got.get("code") is None and got.get("data") is None


def _mismatches(expect: Expect, got: Mapping[str, Any]) -> list[str]:
    raw = got.get("data")
    data: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    unseen = code_hidden(got)  # what the API hides cannot be judged; the cell says so
    checks = [
        (got.get("outcome") == expect.outcome, "outcome"),
        (unseen or expect.code is None or got.get("code") == expect.code, "code"),
        (unseen or all(data.get(key) == value for key, value in expect.data), "data"),
        (expect.is_error is None or got.get("isError") is expect.is_error, "isError"),
        (set(expect.tools) <= set(got.get("tools") or ()), "tools"),
        (not expect.structured or bool(got.get("structured")), "structured"),
    ]
    return [name for ok, name in checks if not ok]


def summarize(got: Mapping[str, Any]) -> str:
    """A short, deterministic account of one op's outcome (no detail text: it may hold ports)."""
    outcome = str(got.get("outcome"))
    if code_hidden(got):
        return "error (code hidden)"
    if outcome == "error":
        return f"error {got.get('code')}"
    if outcome == "result" and got.get("isError") is not None:
        return f"result isError={str(got['isError']).lower()}"
    return outcome


def judge(op: str, got: Mapping[str, Any] | None, era: str) -> str | None:
    """None when ``got`` meets the spec for ``op`` in ``era``, else why not."""
    expect = _ERA_OVERRIDES.get(era, {}).get(op, EXPECTED[op])
    if got is None:
        return f"expected {expect.describe()}; the driver reported nothing for it"
    wrong = _mismatches(expect, got)
    if not wrong:
        return None
    shown = {key: got.get(key) for key in ("outcome", "code", "data", "isError", "tools", "detail")
             if got.get(key) is not None}
    return (f"expected {expect.describe()}; got {json.dumps(shown, sort_keys=True)}"
            f" (wrong: {', '.join(wrong)})")


def judge_run(spec: ClientSpec, mode: str, output: Mapping[str, Any]) -> dict[str, str]:
    """Every problem in one driver run, keyed by op (plus "era" when the negotiated era is wrong)."""
    era = expected_era(mode)
    problems: dict[str, str] = {}
    if output.get("era") not in (None, era):
        problems["era"] = f"expected {era}; got {output.get('era')}"
    ops = output.get("ops") or {}
    for op in spec.ops:
        why = judge(op, ops.get(op), era)
        if why is not None:
            problems[op] = why
    return problems


class DriverError(Exception):
    """A driver did not print its JSON line (crashed, or overran the runner's hard timeout)."""


def run_driver(argv: list[str], timeout: float = 90.0) -> dict[str, Any]:
    """Run one driver in its own process group; return its last stdout line, parsed."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and any server it spawned
        out, err = proc.communicate()
        raise DriverError(f"driver overran {timeout}s: {argv}\nstderr tail:\n{err[-2000:]}") from None
    lines = [line for line in out.splitlines() if line.strip()]
    try:
        parsed = json.loads(lines[-1])
        if not isinstance(parsed, dict):
            raise ValueError("not an object")
    except (IndexError, ValueError) as exc:
        raise DriverError(f"driver exited {proc.returncode} without its JSON line ({exc}): {argv}\n"
                          f"stdout tail:\n{out[-1000:]}\nstderr tail:\n{err[-2000:]}") from None
    return parsed


class InstallError(Exception):
    """Installing a client into the cache failed."""


def cache_root() -> Path:
    configured = os.environ.get("TOOLKEEPER_INTEROP_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "toolkeeper-interop"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created), across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_dir(cache: Path, key: str, build: Callable[[Path], None]) -> Path:
    """``cache/key``, built once by ``build(target)``; a ``.ready`` marker written last tells a
    finished build from an interrupted one, which is removed and rebuilt."""
    target = cache / key
    ready = target / ".ready"
    with locked(cache / f"{key}.lock"):
        if not ready.exists():
            shutil.rmtree(target, ignore_errors=True)
            build(target)
            ready.write_text("")
    return target


def run_install(argv: list[str], timeout: float = 600.0, cwd: Path | None = None) -> None:
    """Run one install step; InstallError with the command and its output's tail on failure."""
    try:
        done = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"install step failed: {argv}: {exc}") from None
    if done.returncode != 0:
        raise InstallError(f"install step exited {done.returncode}: {argv}\n"
                           f"{(done.stdout + done.stderr)[-3000:]}")


# --- docs/compatibility.md -------------------------------------------------------------------

_HEAD = ("client", "mode", "transport", "era", *OPS)
_N_A = "—"


def row_key(row: list[str]) -> tuple[str, str, str]:
    return row[0], row[1], row[2]


def cell_row(spec: ClientSpec, mode: str, transport: str, output: Mapping[str, Any]) -> list[str]:
    """One table row: "pass", "FAIL: <what came back>", or "—" for an op the client cannot express."""
    problems = judge_run(spec, mode, output)
    ops = output.get("ops") or {}
    era = str(output.get("era") or "?")
    if "era" in problems:
        era = f"FAIL: {era}"
    cells = [_N_A if op not in spec.ops else f"FAIL: {summarize(ops.get(op) or {})}" if op in problems
             else "pass (code hidden)" if code_hidden(ops.get(op) or {}) else "pass" for op in OPS]
    return [spec.name, mode, transport, era, *cells]


def parse_rows(doc: str) -> dict[tuple[str, str, str], list[str]]:
    rows: dict[tuple[str, str, str], list[str]] = {}
    for line in doc.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == len(_HEAD) and cells[0] not in ("client", "---"):
            rows[row_key(cells)] = cells
    return rows


UPSTREAM_HEAD = ("upstream", "transport", "caller", "mode", "upstream era", "era", "import",
                 "list", "call")
"""The columns of the upstream servers' table (tests/upstreams/test_peer_upstreams_*.py)."""


def parse_upstream_rows(doc: str) -> dict[tuple[str, ...], list[str]]:
    """The upstream table's rows, keyed by (upstream, transport, caller, mode)."""
    rows: dict[tuple[str, ...], list[str]] = {}
    for line in doc.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if (line.startswith("|") and len(cells) == len(UPSTREAM_HEAD)
                and cells[0] not in ("upstream", "---")):
            rows[tuple(cells[:4])] = cells
    return rows


def _upstream_section(rows: Mapping[tuple[str, ...], list[str]]) -> list[str]:
    return [
        "",
        "## Upstream servers",
        "",
        "MCP servers written with other libraries, started by the tests on 127.0.0.1 (or as the",
        "stdio command the gateway runs), imported as upstreams (`toolkeeper upstream add` and",
        "`upstream sync` on a SQLite registry, then `toolkeeper serve` on it; docs/upstreams.md),",
        "and called through the gateway over Streamable HTTP by each caller, one session per row.",
        "Generated by `tests/upstreams/test_peer_upstreams_are_imported_listed_and_called.py`",
        "(`TOOLKEEPER_WRITE_COMPAT=1` rewrites it; otherwise a row that differs from the run",
        "fails).",
        "",
        "`upstream era`: the protocol version the gateway's own client selects with that upstream",
        "(`auto`, the legacy fallback allowed). `era`: the version the caller negotiates with the",
        "gateway. `import`: the sync's outcome counts. `list`: every imported tool is listed under",
        "its exposed name (every page read) with the upstream's description, input and output",
        "schemas, and no `readOnlyHint: true` or `destructiveHint: false` where the upstream says",
        "otherwise. `call`: the call of one tool is answered with the upstream's text, `isError`",
        "false, and structured content where the tool declares an output schema. `FAIL: ...`",
        "shows what came back instead.",
        "",
        "| " + " | ".join(UPSTREAM_HEAD) + " |",
        "|" + "---|" * len(UPSTREAM_HEAD),
        *("| " + " | ".join(rows[key]) + " |" for key in sorted(rows)),
    ]


HAND_WRITTEN = "## The release gate's matrix"
"""The heading of the page's hand-written part (docs on ``toolkeeper gate matrix``): from it to
the end, the page is kept as it stands by every writer of the generated tables."""


def hand_written(doc: str) -> str:
    """The hand-written tail of ``doc`` (from the blank line before :data:`HAND_WRITTEN`), or
    empty."""
    at = doc.find("\n\n" + HAND_WRITTEN + "\n")
    return "" if at < 0 else doc[at + 1:]


def render_doc(clients: list[str], rows: Mapping[tuple[str, str, str], list[str]],
               upstream_rows: Mapping[tuple[str, ...], list[str]] | None = None,
               tail: str = "") -> str:
    """The whole document: the intro (clients, how to reproduce), the sorted table, the
    upstream servers' table (when it has rows) and the hand-written ``tail``
    (:func:`hand_written`)."""
    lines = [
        "# Client compatibility",
        "",
        "Real MCP clients, installed at pinned versions by the test setup, run every operation below",
        "against `toolkeeper serve --demo` over Streamable HTTP and over stdio, one client session",
        "per row (so `call_after` shows whether the session survived the errors before it).",
        "This file is generated by `tests/interop`; a test fails when it drifts from the results.",
        "",
        "Clients: " + ", ".join(f"`{name}`" for name in sorted(set(clients))) + ".",
        "",
        "Reproduce (installs are cached under `${TOOLKEEPER_INTEROP_CACHE:-~/.cache/toolkeeper-interop}`):",
        "",
        "```text",
        "TOOLKEEPER_WRITE_COMPAT=1 python -m pytest tests/interop",
        "```",
        "",
        "Operations: `list` (tools/list), `call_valid`, `call_invalid` (an `isError` result with the",
        "validation errors), `call_unknown` (-32602), `call_retired` (`_meta.schemaVersion` 3.0.0 of",
        "`db.query`: -32602 with `data.reason` `schema_version_retired`), `call_pinned` (4.0.0),",
        "`call_output` (structured content), `ping` (a result in 2025-11-25; 2026-07-28 removed it, so",
        "-32601 is the expected answer there), `call_after` (the session survived).",
        f"`era` is the negotiated protocol version (`?` when the client's API hides it). `{_N_A}`: the",
        "client's API cannot express the operation (the reason is a comment on its `ClientSpec` in",
        "`tests/interop/*_clients.py`). `pass (code hidden)`: the client reported a JSON-RPC error",
        "but its API shows neither the code nor the data. `FAIL: ...` shows what came back instead.",
        "",
        "| " + " | ".join(_HEAD) + " |",
        "|" + "---|" * len(_HEAD),
    ]
    lines += ["| " + " | ".join(rows[key]) + " |" for key in sorted(rows)]
    if upstream_rows:
        lines += _upstream_section(upstream_rows)
    return "\n".join(lines) + "\n" + tail
