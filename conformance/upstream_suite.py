"""The official MCP conformance suite's tools-level scenarios, run directly against the SDK
fixture server and through ``toolkeeper serve`` fronting that server as an upstream, compared.

    python conformance/upstream_suite.py [--out DIR] [--json] [--workers N]

Starts the fixture (``conformance/fixture/announce.py``: the official Python SDK ``mcp`` 2.3.0
with every name the suite calls) on an ephemeral 127.0.0.1 port, and two gateways on ephemeral
ports, each over its own temporary SQLite registry with the fixture as its one
``[[upstreams]]`` (empty prefix, so the exposed names are the names the scenarios call): hop
``auto`` (the era the gateway selects for its hop to the upstream: modern, which the fixture
serves) and hop ``legacy`` (``era = "legacy"``: the 2025-11-25 session an older upstream
would give). Then, with the suite ``conformance/setup.sh`` installs (under ``$CONF``, default
``~/.cache/toolkeeper-conformance``), one ``conformance server --scenario S`` per scenario:

* ``direct``: every selected scenario of each era against the fixture itself;
* ``hop-auto``: the same against the gateway with hop ``auto``, in both caller eras;
* ``hop-legacy``: the 2025-11-25 scenarios against the gateway with hop ``legacy``.

The selected scenarios are those ``conformance list --server --spec-version ERA`` shows that
list or call tools: ``tools-*``, ``json-schema-2020-12``, the ``elicitation-*`` scenarios (a
tool that elicits) and ``input-required-result-*`` but ``-non-tool-request`` (a prompt's).
A scenario passes when the suite recorded at least one check and none is a ``FAILURE`` or a
``WARNING``.

The baseline is ``conformance/upstream-expected-failures.yml``: per run label and era, each
scenario that passes directly and is expected not to pass through the gateway, with its reason.
Exit status 0 when every scenario passes directly and, through each gateway, exactly the
scenarios outside the baseline pass (a baseline entry that passes is stale, and fails the run
too); 1 otherwise; 2 when a server cannot start or the suite is not installed. ``--json``
prints the outcome as one JSON object: ``{"runs": {label: {era: {scenario: "pass"|"fail"}}},
"unexpected": [...], "stale": [...], "seconds": N}``; otherwise one line per run and era. Each
scenario's ``checks.json`` is kept under ``--out`` (default: a temporary directory)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "conformance" / "fixture" / "announce.py"
BASELINE = ROOT / "conformance" / "upstream-expected-failures.yml"
ERAS = ("2026-07-28", "2025-11-25")
RUNS = {"direct": ERAS, "hop-auto": ERAS, "hop-legacy": ("2025-11-25",)}
"""Each run label and the caller eras it runs."""
HOPS = {"hop-auto": "auto", "hop-legacy": "legacy"}
START_TIMEOUT_S = 60.0
SCENARIO_TIMEOUT_S = 120
_PORT = re.compile(rb"PORT (\d+)\n")
_URL = re.compile(rb"toolkeeper gateway on (http://127\.0\.0\.1:\d+/mcp)\r?\n")
_CALLS_TOOLS = re.compile(r"^(tools-.*|json-schema-2020-12|elicitation-.*|input-required-result-.*)$")
_NOT_TOOLS = frozenset({"input-required-result-non-tool-request"})
"""Selected by the pattern, but what they exercise is not a tool (a prompt's input_required)."""


class Unavailable(Exception):
    """A server did not start, or the suite is not installed (exit 2)."""


def suite_paths() -> tuple[Path, Path]:
    """The suite's ``conformance`` and Node 22's bin directory; Unavailable when absent."""
    conf = Path(os.environ.get("CONF", Path.home() / ".cache" / "toolkeeper-conformance"))
    suite, node = conf / "node_modules" / ".bin" / "conformance", conf / "node22" / "node_modules" / ".bin"
    if not suite.exists() or not (node / "node").exists():
        raise Unavailable(f"the official conformance suite is not installed under {conf} "
                          "(bash conformance/setup.sh installs it)")
    return suite, node


def _suite_env(node: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{node}{os.pathsep}{os.environ.get('PATH', '')}"}


def scenarios(era: str) -> list[str]:
    """The tools-level server scenarios of ``era``, as the suite lists them."""
    suite, node = suite_paths()
    listed = subprocess.run([str(suite), "list", "--server", "--spec-version", era],
                            env=_suite_env(node), capture_output=True, text=True, check=True,
                            timeout=SCENARIO_TIMEOUT_S).stdout
    names = re.findall(r"^\s*- (\S+)", listed, flags=re.MULTILINE)
    return [n for n in names if _CALLS_TOOLS.match(n) and n not in _NOT_TOOLS]


def read_baseline(path: Path = BASELINE) -> dict[str, dict[str, dict[str, str]]]:
    """run label -> era -> scenario -> reason; ValueError for an entry without a reason or
    under a run or era this script does not run."""
    loaded = yaml.safe_load(path.read_text("utf-8")) or {}
    baseline: dict[str, dict[str, dict[str, str]]] = {}
    for label, eras in loaded.items():
        if label not in HOPS:
            raise ValueError(f"{path.name}: {label!r} is not a gateway run ({sorted(HOPS)})")
        for era, entries in (eras or {}).items():
            if str(era) not in RUNS[label]:
                raise ValueError(f"{path.name}: {label} does not run era {era!r}")
            for scenario, reason in (entries or {}).items():
                if not isinstance(reason, str) or not reason.strip():
                    raise ValueError(f"{path.name}: {label} {era} {scenario}: no reason")
            baseline.setdefault(label, {})[str(era)] = dict(entries or {})
    return baseline


def _read_until(stream: IO[bytes], pattern: re.Pattern[bytes]) -> re.Match[bytes]:
    deadline, buffer = time.monotonic() + START_TIMEOUT_S, b""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while (match := pattern.search(buffer)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise Unavailable(f"no ready line within {START_TIMEOUT_S}s: {buffer[-2000:]!r}")
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                raise Unavailable(f"exited before its ready line: {buffer[-2000:]!r}")
            buffer += chunk
    return match


@contextlib.contextmanager
def _serving(argv: Sequence[str], pattern: re.Pattern[bytes], *, stream: str, log: Path
             ) -> Iterator[str]:
    """Run ``argv`` until the block ends (stopped by its pid); yield what ``pattern`` captures
    on its ``stream`` (``stdout`` or ``stderr``), the rest of which goes to ``log``."""
    with log.open("wb") as sink:
        pipe = {"stdout": subprocess.PIPE if stream == "stdout" else sink,
                "stderr": subprocess.PIPE if stream == "stderr" else sink}
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, **pipe)  # type: ignore[call-overload]
        watched: IO[bytes] = getattr(proc, stream)
        drain = threading.Thread(target=lambda: shutil.copyfileobj(watched, sink), daemon=True)
        try:
            found = _read_until(watched, pattern).group(1).decode()
            drain.start()
            yield found
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            if drain.is_alive():
                drain.join(timeout=10)
            watched.close()


def _gateway_config(work: Path, fixture_url: str, hop: str) -> Path:
    config = work / f"{hop}.toml"
    era = "" if hop == "auto" else f'era = "{hop}"\n'
    config.write_text(f'[registry]\nurl = "sqlite:///{work / (hop + ".db")}"\n[server]\nport = 0\n\n'
                      f'[[upstreams]]\nname = "fixture"\nurl = "{fixture_url}"\nprefix = ""\n'
                      f'side_effect = "read"\n{era}', encoding="utf-8")
    return config


def _run_scenario(url: str, era: str, scenario: str, out: Path) -> str:
    suite, node = suite_paths()
    target = out / scenario
    shutil.rmtree(target, ignore_errors=True)
    done = subprocess.run([str(suite), "server", "--url", url, "--spec-version", era,
                           "--scenario", scenario, "-o", str(target)],
                          env=_suite_env(node), capture_output=True, timeout=SCENARIO_TIMEOUT_S,
                          check=False)
    (out / f"{scenario}.txt").write_bytes(done.stdout + done.stderr)
    statuses = [check["status"] for checks in sorted(target.glob("*/checks.json"))
                for check in json.loads(checks.read_text("utf-8"))]
    return "pass" if statuses and not {"FAILURE", "WARNING"} & set(statuses) else "fail"


def run(out: Path, workers: int) -> dict[str, Any]:
    """Every run's outcomes and the baseline's verdict (the ``--json`` object)."""
    started = time.monotonic()
    suite_paths()
    selected = {era: scenarios(era) for era in ERAS}
    baseline = read_baseline()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        work = Path(scratch)
        fixture = stack.enter_context(_serving([sys.executable, str(FIXTURE)], _PORT,
                                               stream="stdout", log=out / "fixture.log"))
        urls = {"direct": f"http://127.0.0.1:{fixture}/mcp"}
        for label, hop in HOPS.items():
            urls[label] = stack.enter_context(_serving(
                [sys.executable, "-m", "toolkeeper", "serve", "--log-level", "warning",
                 "--config", str(_gateway_config(work, urls["direct"], hop))],
                _URL, stream="stderr", log=out / f"{label}.log"))
        jobs = [(label, era, scenario) for label, eras in RUNS.items() for era in eras
                for scenario in selected[era]]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(
                lambda job: _run_scenario(urls[job[0]], job[1], job[2], out / job[0] / job[1]),
                jobs))
    runs: dict[str, dict[str, dict[str, str]]] = {}
    for (label, era, scenario), outcome in zip(jobs, outcomes, strict=True):
        runs.setdefault(label, {}).setdefault(era, {})[scenario] = outcome
    unexpected, stale = [], []
    for label, eras in runs.items():
        for era, results in eras.items():
            expected = baseline.get(label, {}).get(era, {})
            for scenario, outcome in sorted(results.items()):
                direct = runs["direct"][era][scenario]
                if label == "direct" or direct != "pass":
                    if outcome != "pass":
                        unexpected.append(f"{label} {era} {scenario}")
                elif outcome != "pass" and scenario not in expected:
                    unexpected.append(f"{label} {era} {scenario}")
                elif outcome == "pass" and scenario in expected:
                    stale.append(f"{label} {era} {scenario}")
            stale.extend(f"{label} {era} {s}" for s in sorted(set(expected) - set(results)))
    return {"runs": runs, "unexpected": unexpected, "stale": stale,
            "seconds": round(time.monotonic() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="upstream-suite-"))
    try:
        report = run(out, args.workers)
    except Unavailable as exc:
        print(f"upstream suite: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, sort_keys=True, indent=2))
    else:
        for label, eras in report["runs"].items():
            for era, results in eras.items():
                passed = sorted(s for s, o in results.items() if o == "pass")
                print(f"{label} {era}: {len(passed)}/{len(results)} scenarios pass")
        for line in report["unexpected"]:
            print(f"unexpected failure: {line}")
        for line in report["stale"]:
            print(f"stale baseline entry: {line}")
        print(f"upstream suite: {report['seconds']}s, results in {out}")
    return 1 if report["unexpected"] or report["stale"] else 0


if __name__ == "__main__":
    sys.exit(main())
