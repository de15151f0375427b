"""Every file under examples/ runs as its header comment (or docs/index.md's table, for JSON,
which has no comments) says, from a fresh directory holding a copy of examples/, with the real
``toolkeeper`` console script, a private user data directory and servers on 127.0.0.1 stopped
by their pid."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from docs_kit import BIN, READY_LINES, ROOT, free_port, page_env, stop

from toolkeeper.config import SETTINGS

EXAMPLES = ROOT / "examples"
TOOLKEEPER = str(BIN / "toolkeeper")
TIMEOUT_S = 90
_READY = re.compile(rb"toolkeeper gateway on (http://127\.0\.0\.1:\d+/mcp)")
COVERED = {
    "gateway.toml", "typed_tools.py", "payments.lookup.json", "db.query-3.0.0.json",
    "db.query-4.0.0.json", "payments.lookup.bad-args.json", "payments.lookup-1.1.0.json",
    "keys/idp-jwks.json", "keys/idp-dev-private-key.pem", "conformance/README.md",
    "conformance/handlers.py", "keys/gate-dev-hmac.key", "keys/gate-dev-ed25519.pub.pem",
}
"""The files each test below runs, besides the contracts under conformance/contracts/."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def tk(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLKEEPER, *args], cwd=home, env=page_env(home), capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)


@contextmanager
def serving(home: Path, *args: str) -> Iterator[str]:
    """``toolkeeper serve ARGS``; the URL its ready line names; stopped by pid, exit 0."""
    proc = subprocess.Popen([TOOLKEEPER, "serve", *args], cwd=home, env=page_env(home),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        read = []
        for _ in range(READY_LINES):
            line = proc.stderr.readline()
            read.append(line)
            if not line or (found := _READY.search(line)):
                break
        assert line and found, b"".join(read).decode(errors="replace")
        yield found.group(1).decode()
    finally:
        code = stop(proc)
        proc.stderr.close()
    assert code == 0


def test_every_example_file_is_run_by_a_test_here() -> None:
    files = {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    contracts = {f for f in files if f.startswith("conformance/contracts/")}
    assert files - contracts == COVERED
    assert contracts and all(f.endswith(".json") for f in contracts)


def test_gateway_toml_serves_its_handlers_to_an_api_key_and_a_minted_jwt(
        home: Path) -> None:
    metrics = free_port()
    with serving(home, "--config", "examples/gateway.toml", "--port", str(free_port()),
                 "--metrics-port", str(metrics)) as url:
        added = tk(home, "keys", "add", "--tenant", "acme", "--scope", "payments.read",
                   "--scope", "shipping.read", "--clearance", "confidential")
        assert added.returncode == 0, added.stderr
        key = added.stdout.strip()
        listed = tk(home, "tools", "--json", "--token", key, url)
        called = tk(home, "call", "--json", "--token", key, url, "units.convert",
                    '{"value": 2.54, "unit": "in"}')
        anonymous = tk(home, "tools", "--json", url)
        minted = tk(home, "token", "mint", "--config", "examples/gateway.toml", "--issuer",
                    "https://idp.example", "--tenant", "acme", "--scope", "payments.read",
                    "--clearance", "confidential")
        assert minted.returncode == 0, minted.stderr
        by_jwt = tk(home, "tools", "--json", "--token", minted.stdout.strip(), url)
        scraped = httpx.get(f"http://127.0.0.1:{metrics}/metrics", timeout=20)
    assert listed.returncode == 0, listed.stderr
    imported = ["upstream.db.query", "upstream.payments.lookup", "upstream.tickets.create"]
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == [
        "payments.lookup", "shipping.quote", "units.convert", *imported]  # the demo upstream
    answer = json.loads(called.stdout)
    assert (called.returncode, answer["ok"], answer["result"]["structuredContent"]) == (
        0, True, {"result": 6.4516})
    assert by_jwt.returncode == 0, by_jwt.stderr
    assert [t["name"] for t in json.loads(by_jwt.stdout)["tools"]] == [
        "payments.lookup", "units.convert", *imported]  # no shipping.read scope in the token
    assert (anonymous.returncode, json.loads(anonymous.stdout)["error"]["code"]) == (
        2, "client.unauthorized")
    assert scraped.status_code == 200 and "toolkeeper_calls_total" in scraped.text
    registry = home / ".local" / "share" / "toolkeeper" / "registry.db"
    assert registry.is_file()  # registry.url = "": the user data directory's file


def _keys(table: dict[str, object], prefix: str = "") -> set[str]:
    """The dotted keys a TOML document sets, named as the reference names them."""
    out: set[str] = set()
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict) and key in ("limits.tenants", "limits.tools",
                                               "upstreams[].tools"):
            for entry in value.values():
                out |= _keys(entry, f"{key}.*.")
        elif isinstance(value, dict):
            out |= _keys(value, f"{key}.")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for item in value:
                out |= _keys(item, f"{key}[].")
        else:
            out.add(key)
    return out


ISSUER_KEY_SOURCES = {"auth.jwt.issuers[].secret_file", "auth.jwt.issuers[].public_key_file",
                      "auth.jwt.issuers[].jwks_url", "upstreams[].url", "upstreams[].token_file",
                      "upstreams[].header_file"}
"""An issuer reads its key from one source, an upstream runs at a URL or a command and takes one
credential file: gateway.toml sets jwks_file and command and shows these commented."""


def test_gateway_toml_sets_every_key_of_the_reference_but_the_other_issuer_key_sources() -> None:
    text = (EXAMPLES / "gateway.toml").read_text(encoding="utf-8")
    keys = _keys(tomllib.loads(text))
    assert sorted({row.key for row in SETTINGS} - keys) == sorted(ISSUER_KEY_SOURCES)
    assert sorted(keys - {row.key for row in SETTINGS}) == []
    for key in ISSUER_KEY_SOURCES:
        assert f"# {key.rsplit('.', 1)[1]} = " in text


def test_gateway_toml_names_the_gate_keys_a_decision_is_signed_and_checked_with(
        home: Path) -> None:
    from toolkeeper.cli.sources import read_source
    from toolkeeper.config import load_config
    from toolkeeper.gate.keys import signing_key_from, trusted_keys_from

    config = load_config(str(home / "examples" / "gateway.toml"), read=read_source)
    signer = signing_key_from(config.gate, {})
    trusted = trusted_keys_from(config.gate, {})
    assert signer is not None and (signer.key_id, signer.algorithm) == (
        "release-controller", "hmac-sha256")
    assert sorted(trusted) == ["release-controller-ed25519"]


def test_typed_tools_exports_its_contracts_and_serves_both_tools(home: Path) -> None:
    exported = tk(home, "contracts", "export", "examples/typed_tools.py:handlers", "contracts/")
    assert exported.returncode == 0, exported.stderr
    assert sorted(p.name for p in (home / "contracts").iterdir()) == [
        "shipping.quote-1.0.0.json", "units.convert-1.0.0.json"]
    listed = tk(home, "tools", "--json", "--stdio", "--", TOOLKEEPER, "serve", "--registry",
                "memory:", "--handlers", "examples/typed_tools.py:handlers", "--stdio")
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == [
        "shipping.quote", "units.convert"]
    called = tk(home, "call", "--json", "--stdio", "--", TOOLKEEPER, "serve", "--registry",
                "memory:", "--handlers", "examples/typed_tools.py:handlers", "--stdio",
                "shipping.quote", '{"weight_kg": 2, "destination": "DE"}')
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["result"]["structuredContent"] == {
        "price_cents": 1300, "currency": "EUR", "days": 4}


def test_the_contract_files_publish_and_the_breaking_one_is_refused(home: Path) -> None:
    published = tk(home, "publish", "examples/payments.lookup.json",
                   "examples/db.query-3.0.0.json", "examples/db.query-4.0.0.json")
    assert published.returncode == 0, published.stderr
    assert [line.split()[:3] for line in published.stdout.splitlines()] == [
        ["published", "payments.lookup", "1.0.0"], ["published", "db.query", "3.0.0"],
        ["published", "db.query", "4.0.0"]]
    refused = tk(home, "publish", "--json", "examples/payments.lookup-1.1.0.json")
    error = json.loads(refused.stdout.splitlines()[-1])["error"]
    assert (refused.returncode, error["rule"], error["minimumVersion"]) == (
        1, "publish.bump_required", "2.0.0")


def test_the_bad_arguments_give_the_seeds_three_sorted_errors(home: Path) -> None:
    done = tk(home, "validate", "--json", "examples/payments.lookup.json",
              "examples/payments.lookup.bad-args.json")
    assert done.returncode == 1
    assert [(e["path"], e["keyword"]) for e in json.loads(done.stdout)["errors"]] == [
        ("$.include_legs", "type"), ("$.reference", "pattern"),
        ("$.urgent", "additionalProperties")]


def test_the_jwks_file_holds_public_keys_only() -> None:
    keys = json.loads((EXAMPLES / "keys" / "idp-jwks.json").read_text())["keys"]
    assert keys and all("d" not in key and key.get("kid") for key in keys)


def test_the_conformance_estate_serves_as_its_readme_says(home: Path) -> None:
    readme = (EXAMPLES / "conformance" / "README.md").read_text(encoding="utf-8")
    command = re.search(r"```bash\n(toolkeeper serve .*?)\n```", readme, re.S)
    assert command is not None
    words = command.group(1).replace("\\\n", " ").split()
    assert words[:3] == ["toolkeeper", "serve", "--registry"]
    words[3] = f"sqlite://{home / 'conformance.db'}"  # the README's /tmp file, made private
    with serving(home, *words[2:], "--port", str(free_port())) as url:
        listed = tk(home, "tools", "--json", url)
        called = tk(home, "call", "--json", url, "test_simple_text", "{}")
    names = sorted(p.stem for p in (EXAMPLES / "conformance" / "contracts").glob("*.json"))
    assert sorted(t["name"] for t in json.loads(listed.stdout)["tools"]) == names
    assert json.loads(called.stdout)["result"]["content"][0]["text"] == (
        "This is a simple text response for testing.")
