"""What ``toolkeeper serve`` prints once it serves (a real subprocess): the first line
``toolkeeper gateway on URL`` unchanged, then ``toolkeeper KEY: VALUE`` lines for the registry
(its password masked), the estate, the auth mode, the handler count and the probes; a
``--stdio`` server prints the same on standard error, ``stdio`` for the URL."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from process_kit import SRC, START_TIMEOUT_S, read_until, stop_process

_FIRST = re.compile(rb"toolkeeper gateway on (\S+)\n")
_BANNER = re.compile(rb"toolkeeper gateway on (\S+)\n((?:toolkeeper \w+: .*\n)+?)"
                     rb"toolkeeper (?:probes|handlers): .*\n")
_LINE = re.compile(r"toolkeeper (\w+): (.*)")


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"),
           "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    env.pop("TOOLKEEPER_REGISTRY", None)
    return env


def _banner(args: Sequence[str], home: Path, *, stdio: bool = False
            ) -> tuple[str, dict[str, str], str]:
    """Start ``serve args``, read its stderr up to the end of the start-up lines, stop it;
    (first line's URL, the KEY: VALUE lines, everything read)."""
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", *args],
                            stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
                            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=_env(home))
    try:
        assert proc.stderr is not None
        match = read_until(proc.stderr, re.compile(
            rb"toolkeeper gateway on \S+\n(?:toolkeeper \w+: .*\n)*"
            + (rb"toolkeeper handlers: .*\n" if stdio else rb"toolkeeper probes: .*\n")),
            START_TIMEOUT_S)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()
    text = match.string.decode()
    block = match.group(0).decode()
    url_match = _FIRST.search(match.group(0))
    assert url_match is not None
    lines = dict(m.groups() for m in map(_LINE.fullmatch, block.splitlines()[1:]) if m)
    return url_match.group(1).decode(), lines, text


def test_http_start_prints_the_url_then_registry_estate_auth_handlers_probes(
        tmp_path: Path) -> None:
    db = tmp_path / "registry.db"
    url, lines, _ = _banner(["--demo", "--port", "0", "--registry", f"sqlite://{db}"],
                            tmp_path)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url)
    base = url.removesuffix("/mcp")
    assert lines == {
        "registry": f"sqlite://{db}",
        "estate": "demo; tools=3 versions=4",
        "auth": "none (anonymous local principal, loopback only)",
        "handlers": "4",
        "probes": f"{base}/healthz {base}/readyz",
    }


def test_the_default_registry_and_an_estate_directory_are_named(
        tmp_path: Path, examples_dir: Path) -> None:
    estate = examples_dir / "conformance" / "contracts"
    _, lines, _ = _banner(["--estate", str(estate), "--port", "0"], tmp_path)
    assert lines["registry"] == f"sqlite://{tmp_path / 'data' / 'toolkeeper' / 'registry.db'}"
    assert re.fullmatch(rf"dir {re.escape(str(estate))}; tools=\d+ versions=\d+",
                        lines["estate"])
    assert lines["handlers"] == "0"


def test_the_metrics_url_is_printed_when_metrics_are_on(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc_args = ["--demo", "--port", "0", "--metrics-port", str(port),
                 "--registry", f"sqlite://{tmp_path / 'r.db'}"]
    _, lines, text = _banner(proc_args, tmp_path)
    assert lines["auth"].startswith("none")
    assert f"toolkeeper metrics: http://127.0.0.1:{port}/metrics\n" in text


def test_stdio_prints_the_same_lines_on_stderr(tmp_path: Path) -> None:
    db = tmp_path / "registry.db"
    url, lines, _ = _banner(["--stdio", "--demo", "--registry", f"sqlite://{db}"], tmp_path,
                            stdio=True)
    assert url == "stdio"
    assert lines == {"registry": f"sqlite://{db}", "estate": "demo; tools=3 versions=4",
                     "auth": "stdio principal (anonymous local)", "handlers": "4"}


@pytest.mark.postgres
@pytest.mark.parametrize("form", ["userinfo", "query"])
def test_a_postgres_password_is_never_printed(tmp_path: Path, pg_url: str, form: str) -> None:
    secret = "s3cr3t-Pw-7f1e"
    # The embedded server trusts local connections: any password connects.
    if form == "userinfo":
        url = pg_url.replace("postgres:@", f"postgres:{secret}@", 1)
        assert secret in url
        shown = url.replace(secret, "***")
    else:
        url = f"{pg_url}&password={secret}"
        shown = f"{pg_url}&password=***"
    _, lines, text = _banner(["--demo", "--port", "0", "--registry", url], tmp_path)
    assert lines["registry"] == shown
    assert secret not in text
