"""Seed 004's reference scenario, run for real (``toolkeeper gate demo``, docs/gate.md).

A gateway (``toolkeeper serve``, a SQLite registry with the demo estate and a candidate
``payments.lookup`` 1.1.0 published over 1.0.0, a durable call log) is started on 127.0.0.1.
Against it, in order:

1. **Load**: :data:`LOAD_CALLS` calls of each version, pinned, every answer checked.
2. **Transcripts**: the harness replays :data:`TRANSCRIPTS` (15: live golden and negative cases
   the gateway answers, and the recorded completion results, valid and malformed, that check
   the harness's own judgments) against it.
3. **Proxy evidence**: the demo's exchanges through a real nginx in front of it, in the faulty
   configuration (a protocol error collapsed into HTTP 500, a changed body) or, ``fixed``, the
   correct one.
4. **SDK diff**: the additive-field fixtures served to a client view, judged for the
   intermediary role (a gateway must keep what it does not interpret): the official Python
   SDK's view, which drops ``futureHint``, or, ``fixed``, toolkeeper's client, which keeps it.
5. **Health windows**: the gateway is stopped (its call log flushed) and each version's window
   read from the call log and judged under :data:`POLICY`, the baseline (1.0.0) beside the
   candidate.
6. **Rollback evidence** for 1.0.0, built from the registry (its admission record, contract and
   handler module digests, status, the deprecate command that restores the route) and signed
   with the demo key (a labelled non-secret fixture).

The six sections make one evidence bundle; the gate decides on it and signs the decision (DSSE).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final

import httpx

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import ToolkeeperError

__all__ = ["CANDIDATE", "LOAD_CALLS", "POLICY", "TARGET", "TOOL", "TRANSCRIPTS", "run_demo"]

TOOL, TARGET, CANDIDATE = "payments.lookup", "1.0.0", "1.1.0"
LOAD_CALLS: Final = 40
POLICY: Final[dict[str, Any]] = {
    "minSamples": 30, "maxErrorRate": 0.05, "latency": {"percentile": 95, "maxMs": 2000},
    "baseline": {"maxErrorRateDelta": 0.05}}
"""The demo's health-window policy, declared before the load is sent."""
TRANSCRIPTS: Final = (
    "golden-completion-result", "golden-modern-server-discover", "golden-modern-string-request-id",
    "golden-modern-tools-call", "golden-modern-tools-list", "golden-modern-unknown-meta-key",
    "golden-unknown-additive-field", "negative-completion-too-many-values",
    "negative-malformed-json", "negative-method-header-mismatch",
    "negative-proxy-collapsed-protocol-error", "negative-unknown-method", "negative-unknown-tool",
    "negative-unsupported-protocol-version", "negative-wrong-jsonrpc-version")
SDK_FIXTURES: Final = ("golden-sdk-tools-list-cache-hints", "golden-unknown-additive-field")
_READY: Final = re.compile(r"toolkeeper gateway on (\S+/mcp)")
_MODERN: Final = "2026-07-28"
_START_LINES: Final = 400
_START_S: Final = 60.0


def _refuse(message: str, code: str, **data: Any) -> ToolkeeperError:
    return ToolkeeperError(message, code=code, data=data)


def preflight(fixed: bool) -> None:
    """Refuse (exit 2) before anything starts when a part the scenario runs is missing."""
    from toolkeeper.conformance import find_nginx
    from toolkeeper.conformance.sdk_clients import locate

    if find_nginx() is None:
        raise _refuse("the demo's proxy evidence runs through a real nginx, and none is "
                      "installed: install the nginx package (Debian/Ubuntu: apt-get install "
                      "nginx)", "gate.demo_needs_nginx", package="nginx")
    found = locate("toolkeeper" if fixed else "python")
    if found.reason is not None:
        raise _refuse(f"the demo's SDK diff needs the official Python SDK: pip install mcp "
                      f"({found.reason})", "gate.demo_needs_sdk", package="mcp")


def _candidate_contract() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("toolkeeper.demo").joinpath(f"{TOOL}-{TARGET}.json").read_text()
    contract: dict[str, Any] = json.loads(text)
    contract["version"] = CANDIDATE
    contract["inputSchema"]["properties"]["include_fees"] = {
        "type": "boolean", "default": False, "description": "Include the fees charged"}
    return contract


def _estate(workdir: Path) -> tuple[str, Path]:
    """The registry (demo estate and the candidate) and the gateway's configuration file."""
    from toolkeeper.contracts.spec import spec_from_mapping
    from toolkeeper.demo import install_demo
    from toolkeeper.registry import Registry

    url = f"sqlite://{workdir / 'registry.db'}"
    with Registry.open(url) as registry:
        install_demo(registry)
        registry.publish(spec_from_mapping(_candidate_contract()), actor="gate-demo")
    config = workdir / "gateway.toml"
    config.write_text(f'[registry]\nurl = "{url}"\n[server]\nport = 0\n[estate]\ndemo = true\n'
                      '[calllog]\nflush_interval_ms = 100\n[logging]\nlevel = "warning"\n')
    return url, config


def _lines(stream: IO[bytes], into: queue.Queue[str | None]) -> None:
    for raw in iter(stream.readline, b""):
        into.put(raw.decode("utf-8", "replace"))
    into.put(None)


@contextmanager
def _gateway(config: Path) -> Iterator[tuple[str, Callable[[], None]]]:
    """``toolkeeper serve`` on 127.0.0.1: its URL, and how to stop it cleanly (the call log
    flushed); its log is drained for as long as it runs."""
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", "--config",
                             str(config)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(proc.stderr, lines), daemon=True)
    reader.start()

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(timeout=5)

    try:
        for _ in range(_START_LINES):
            line = lines.get(timeout=_START_S)
            if line is None:
                raise _refuse("the demo's gateway did not start", "gate.demo_gateway_failed",
                              exit=proc.wait())
            if (found := _READY.search(line)) is not None:
                break
        else:
            raise _refuse("the demo's gateway did not say where it listens",
                          "gate.demo_gateway_failed")
        yield found.group(1), stop
    except queue.Empty:
        raise _refuse("the demo's gateway did not start in time",
                      "gate.demo_gateway_failed") from None
    finally:
        stop()


def _load(url: str) -> None:
    """``LOAD_CALLS`` pinned calls of each version; each answer must be a success."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": _MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": TOOL}
    with httpx.Client(timeout=30) as http:
        for i in range(LOAD_CALLS):
            for version in (CANDIDATE, TARGET):
                response = http.post(url, headers=headers, json={
                    "jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": TOOL, "arguments": {"reference": f"PMT-{771 + i % 5}"},
                               "_meta": {"io.modelcontextprotocol/protocolVersion": _MODERN,
                                         "io.modelcontextprotocol/clientCapabilities": {},
                                         "schemaVersion": version}}})
                body = response.json() if response.status_code == 200 else {}
                if "result" not in body:
                    raise _refuse(f"a load call of {TOOL} {version} was not answered: HTTP "
                                  f"{response.status_code}", "gate.demo_load_failed")


def _transcripts(url: str) -> dict[str, Any]:
    from toolkeeper.client import Target
    from toolkeeper.conformance import RunOptions, builtin_corpus, run_transcripts

    chosen = [t for t in builtin_corpus() if t.name in TRANSCRIPTS]
    report = asyncio.run(run_transcripts(Target.from_url(url), chosen,
                                         RunOptions(era=_MODERN), label="toolkeeper-demo"))
    return report.to_json()


def _proxy(url: str, fixed: bool) -> dict[str, Any]:
    from toolkeeper.cli.conformance_evidence_cmd import DEMO_EXCHANGES
    from toolkeeper.conformance import run_proxy_evidence

    return run_proxy_evidence(url, "correct" if fixed else "faulty", DEMO_EXCHANGES).to_json()


def _sdk_diff(fixed: bool) -> dict[str, Any]:
    from toolkeeper.cli.conformance_evidence_cmd import DEMO_HOST
    from toolkeeper.conformance import run_sdk_diff, sdk_fixtures

    report = run_sdk_diff(DEMO_HOST, ["toolkeeper" if fixed else "python"], "intermediary",
                          fixtures=sdk_fixtures(SDK_FIXTURES), require=True)
    return report.to_json()


def _windows(registry_url: str, start_us: int, end_us: int) -> dict[str, Any]:
    from toolkeeper.gate import WindowPolicy
    from toolkeeper.gate.call_windows import windows_from_calls
    from toolkeeper.gate.observed import health_section
    from toolkeeper.registry import Registry
    from toolkeeper.registry.call_rows import open_call_rows

    rows = open_call_rows(registry_url, read_only=True)
    try:
        found = windows_from_calls(rows, TOOL, [CANDIDATE, TARGET], start_us, end_us)
    finally:
        rows.close()
    with Registry.open(registry_url, create=False, read_only=True) as registry:
        return health_section(WindowPolicy.from_json(POLICY), "calls",
                              (TOOL, CANDIDATE, found[CANDIDATE]), (TOOL, TARGET, found[TARGET]),
                              registry)


def _rollback(registry_url: str, healthy: bool) -> dict[str, Any]:
    from toolkeeper.cli.gate_rollback_cmd import artifact_resolver
    from toolkeeper.gate.keys import DEMO_KEY
    from toolkeeper.gate.rollback_evidence import build_evidence
    from toolkeeper.registry import Registry

    with Registry.open(registry_url, create=False, read_only=True) as registry:
        return build_evidence(registry, TOOL, TARGET, DEMO_KEY, healthy=healthy,
                              artifact=artifact_resolver((), True))


def _step(progress: Callable[[str], None], what: str) -> None:
    progress(f"gate demo: {what}")


def run_demo(workdir: Path, fixed: bool, progress: Callable[[str], None]) -> dict[str, Any]:
    """The scenario in ``workdir`` (its artefacts are left there: bundle.json,
    decision.dsse.json); the summary object ``gate demo --json`` prints."""
    from toolkeeper.gate.attestation import sign_decision
    from toolkeeper.gate.decision import decide
    from toolkeeper.gate.evidence import bundle
    from toolkeeper.gate.keys import DEMO_KEY

    preflight(fixed)
    registry_url, config = _estate(workdir)
    _step(progress, "serving the gateway (SQLite registry, durable call log)")
    start_us = time.time_ns() // 1000
    with _gateway(config) as (url, stop):
        _step(progress, f"{LOAD_CALLS} calls of {TOOL} {CANDIDATE} and of {TARGET}")
        _load(url)
        _step(progress, f"the harness: {len(TRANSCRIPTS)} transcripts")
        transcripts = _transcripts(url)
        _step(progress, f"proxy evidence through nginx ({'correct' if fixed else 'faulty'})")
        proxy = _proxy(url, fixed)
        end_us = time.time_ns() // 1000
        stop()
    _step(progress, "the SDK diff (" + ("toolkeeper's client" if fixed else
                                        "the official Python SDK") + ", intermediary role)")
    sdk = _sdk_diff(fixed)
    _step(progress, "health windows from the call log; rollback evidence from the registry")
    windows = _windows(registry_url, start_us, end_us)
    rollback = _rollback(registry_url, windows["baseline"]["result"]["status"] == "healthy")
    made = bundle({"transcripts": {"runs": [transcripts]}, "sdkDiffs": {"reports": [sdk]},
                   "proxyEvidence": {"reports": [proxy]}, "healthWindows": windows,
                   "rollbackEvidence": rollback, "policy": {"window": POLICY}})
    decision = decide(made, {DEMO_KEY.key_id: DEMO_KEY.trusted()})
    envelope = sign_decision(decision, made["sections"]["policy"]["content"], DEMO_KEY)
    decided = decision.to_dict()
    matrix = _matrix(transcripts, decided)
    (workdir / "bundle.json").write_bytes(canonical_json(made) + b"\n")
    (workdir / "decision.json").write_bytes(canonical_json(decided) + b"\n")
    (workdir / "decision.dsse.json").write_bytes(canonical_json(envelope) + b"\n")
    (workdir / "matrix.json").write_bytes(canonical_json(matrix) + b"\n")
    if _report(workdir / "report.html", made, decided, matrix):
        _step(progress, f"the report: {workdir / 'report.html'}")
    return summary(made, decided, os.fspath(workdir))


def _matrix(transcripts: dict[str, Any], decided: dict[str, Any]) -> dict[str, Any]:
    """The compatibility matrix of the harness run (toolkeeper's harness against this
    gateway over Streamable HTTP), the decision beside it."""
    from importlib import metadata

    from toolkeeper.gate.matrix import Defaults, Party, build_matrix

    toolkeeper = Party("toolkeeper", metadata.version("toolkeeper"))
    return build_matrix([("transcripts", transcripts)],
                        Defaults(toolkeeper, toolkeeper, "streamable-http"), decided)


def _report(path: Path, made: dict[str, Any], decided: dict[str, Any],
            matrix: dict[str, Any]) -> bool:
    """The HTML report, where matplotlib is installed (``toolkeeper[gate]``)."""
    from toolkeeper.gate.report import render
    from toolkeeper.gate.report_charts import require_matplotlib

    try:
        require_matplotlib()
    except ToolkeeperError:
        return False
    path.write_text(render(made, decided, matrix), encoding="utf-8")
    return True


def summary(made: dict[str, Any], decision: dict[str, Any], workdir: str) -> dict[str, Any]:
    """What the demo prints: seed 004's fields, and the counts apart by what they count."""
    sections = {name: kept["content"] for name, kept in made["sections"].items()}
    run = sections["transcripts"]["runs"][0]
    cases = run["cases"]
    passed = sum(1 for case in cases if case["outcome"] == "pass")
    runs = [r for report in sections["sdkDiffs"]["reports"] for r in report["runs"]]
    dropped = sorted({path.removeprefix("$.") for r in runs for path in r["semanticLoss"]})
    verified = next(r for r in decision["reasons"] if r["rule"] == "rollback.verified")
    windows = sections["healthWindows"]
    return {
        "transcriptsPassed": passed, "transcriptsTotal": len(cases),
        "transcriptsLive": {"passed": run["live"]["passed"],
                            "total": sum(run["live"].values())},
        "transcriptsSelfcheck": {"passed": run["selfcheck"]["passed"],
                                 "total": sum(run["selfcheck"].values())},
        "sdkDroppedFields": dropped,
        "proxyIssues": sorted({i for report in sections["proxyEvidence"]["reports"]
                               for i in report["issues"]}),
        "healthWindows": {name: {"version": w["version"], "status": w["result"]["status"],
                                 "samples": w["result"]["samples"],
                                 "errors": w["result"]["errors"]}
                          for name, w in (("candidate", windows["candidate"]),
                                          ("baseline", windows["baseline"]))},
        "rollbackVerified": verified["status"] == "passed",
        "releaseAction": decision["outcome"],
        "counts": decision["counts"],
        "reasons": [r for r in decision["reasons"] if r["status"] != "passed"],
        "evidenceDigest": decision["evidenceDigest"],
        "signedBy": {"keyid": DEMO_KEY_ID(), "label": "demo fixture, not a secret"},
        "artefacts": workdir,
    }


def DEMO_KEY_ID() -> str:
    from toolkeeper.gate.keys import DEMO_KEY

    return DEMO_KEY.key_id
