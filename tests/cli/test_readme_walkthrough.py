"""The README, docs/, the commands' --help and examples/ followed literally by a new user: every
documented command line, exit code, output shape, option and environment variable, run as a real
``toolkeeper`` process (the installed console script) in a temporary directory, over a SQLite
registry, with the gateway on 127.0.0.1. Every wait is bounded."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from process_kit import keep_draining, read_until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_SCRIPT = Path(sys.executable).parent / "toolkeeper"
TOOLKEEPER = [str(_SCRIPT)] if _SCRIPT.exists() else [shutil.which("toolkeeper") or "toolkeeper"]
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
READY = re.compile(rb"toolkeeper gateway on (\S+)\n")
TIMEOUT_S = 60


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment with a private user data dir and no TOOLKEEPER_REGISTRY."""
    env = {k: v for k, v in os.environ.items() if k != "TOOLKEEPER_REGISTRY"}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), **extra)
    return env


def tk(tmp_path: Path, *args: str, stdin: str | None = None, **env: str
       ) -> tuple[int, str, str]:
    done = subprocess.run([*TOOLKEEPER, *args], input=stdin, capture_output=True, text=True,
                          cwd=tmp_path, env=_env(tmp_path, **env), timeout=TIMEOUT_S,
                          check=False)
    return done.returncode, done.stdout, done.stderr


def tk_json(tmp_path: Path, *args: str, **env: str) -> tuple[int, Any]:
    code, out, err = tk(tmp_path, *args, "--json", **env)
    assert out.strip(), err
    return code, json.loads(out)


def default_db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "toolkeeper" / "registry.db"


@contextmanager
def serving(tmp_path: Path, *args: str, **env: str) -> Iterator[str]:
    """``toolkeeper serve ARGS`` on HTTP; yields the URL it announces; SIGTERM, exit 0 after."""
    proc = subprocess.Popen([*TOOLKEEPER, "serve", *args], cwd=tmp_path,
                            env=_env(tmp_path, **env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        url = read_until(proc.stderr, READY, 30).group(1).decode()
        keep_draining(proc.stderr)
        yield url
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        proc.stderr.close()


def headers(name: str, method: str = "tools/call", **extra: str) -> dict[str, str]:
    return {"content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28", "mcp-method": method, "mcp-name": name,
            **extra}


def call(name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {**meta, **ENVELOPE}}}


LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": ENVELOPE}}


def post(url: str, body: dict[str, Any], head: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=20) as http:
        return http.post(url, content=json.dumps(body), headers=head)


# --- The gateway (README "Set-up on a fresh machine", docs/handlers.md) ---------------------

README_CALL = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payments.lookup",'
               '"arguments":{"reference":"PMT771","include_legs":"yes","urgent":true},"_meta":'
               '{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
               '"io.modelcontextprotocol/clientCapabilities":{}}}}')


def test_serve_demo_without_a_registry_publishes_into_the_user_data_dir_and_answers_the_readme_call(
        tmp_path: Path) -> None:
    with serving(tmp_path, "--demo", "--port", "0") as url:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url)
        response = post(url, json.loads(README_CALL), headers("payments.lookup"))
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert [(e["path"], e["keyword"]) for e in result["structuredContent"]["errors"]] == [
        ("$.include_legs", "type"), ("$.reference", "pattern"),
        ("$.urgent", "additionalProperties")]
    assert default_db(tmp_path).is_file()
    code, versions = tk_json(tmp_path, "versions", "db.query")  # the same default registry
    assert code == 0
    assert [(v["version"], v["status"]) for v in versions] == [("3.0.0", "retired"),
                                                                ("4.0.0", "active")]


def test_a_call_pinned_to_the_retired_db_query_3_is_refused_with_relist_before_anything_runs(
        tmp_path: Path) -> None:
    with serving(tmp_path, "--demo", "--port", "0") as url:
        response = post(url, call("db.query", {"sql": "select 1"}, schemaVersion="3.0.0"),
                        headers("db.query"))
    error = response.json()["error"]
    assert error["code"] == -32602
    assert (error["data"]["reason"], error["data"]["action"]) == ("schema_version_retired",
                                                                  "relist")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_default_endpoint_is_127_0_0_1_port_8000_path_mcp(tmp_path: Path) -> None:
    if not _port_free(8000):
        pytest.skip("port 8000 is taken on this machine")
    with serving(tmp_path, "--registry", "memory:") as url:
        assert url == "http://127.0.0.1:8000/mcp"


def test_port_and_path_move_the_endpoint(tmp_path: Path) -> None:
    with serving(tmp_path, "--demo", "--registry", "memory:", "--port", "0",
                 "--path", "/tools/rpc") as url:
        assert url.endswith("/tools/rpc")
        assert post(url, LIST, headers("", "tools/list")).status_code == 200
        old = url.removesuffix("/tools/rpc") + "/mcp"
        assert post(old, LIST, headers("", "tools/list")).status_code == 404


def test_registry_flag_wins_over_the_environment(tmp_path: Path) -> None:
    flag, env = tmp_path / "flag.db", tmp_path / "env.db"
    code, _, err = tk(tmp_path, "publish", str(EXAMPLES / "payments.lookup.json"),
                      "--registry", f"sqlite://{flag}", TOOLKEEPER_REGISTRY=f"sqlite://{env}")
    assert code == 0, err
    assert flag.is_file() and not env.exists()


def test_python_dash_m_toolkeeper_is_the_same_cli_as_the_console_script(tmp_path: Path) -> None:
    script = tk(tmp_path, "--version")
    module = subprocess.run([sys.executable, "-m", "toolkeeper", "--version"],
                            capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert script[0] == module.returncode == 0
    assert script[1] == module.stdout and re.search(r"\d+\.\d+\.\d+", module.stdout)


# --- Serve your own tools (--estate, --handlers) ----------------------------------------------

HELLO = """\
name: hello
version: {version}
title: Hello
description: {description}
inputSchema: {{type: object, properties: {{who: {{type: string}}}}, required: [who]}}
dataClassification: public
sideEffect: read
"""

MY_TOOLS = """\
from toolkeeper.server import ToolHandlers

HANDLERS = ToolHandlers()


@HANDLERS.tool("hello")
def hello(arguments):
    return "hello " + arguments["who"]


async def hello_v2(arguments):
    return "hello v2 " + arguments["who"]


HANDLERS.bind("hello", hello_v2, version="2.0.0")
"""


def _estate(tmp_path: Path) -> None:
    contracts = tmp_path / "my-contracts"
    contracts.mkdir()
    (contracts / "hello-1.yaml").write_text(HELLO.format(version="1.0.0", description="Greets."))
    (contracts / "hello-2.json").write_text(json.dumps({
        "name": "hello", "version": "2.0.0", "title": "Hello", "description": "Greets.",
        "inputSchema": {"type": "object", "properties": {"who": {"type": "string"},
                                                         "loud": {"type": "boolean"}},
                        "required": ["who", "loud"]},
        "dataClassification": "public", "sideEffect": "read"}))
    (tmp_path / "my_tools.py").write_text(MY_TOOLS)


def test_the_readme_estate_and_handlers_command_serves_sync_and_async_handlers_per_version(
        tmp_path: Path) -> None:
    _estate(tmp_path)
    db = tmp_path / "estate.db"
    with serving(tmp_path, "--estate", "my-contracts/", "--handlers", "my_tools.py:HANDLERS",
                 "--port", "0", TOOLKEEPER_REGISTRY=f"sqlite://{db}") as url:
        v2 = post(url, call("hello", {"who": "ada", "loud": True}), headers("hello")).json()
        v1 = post(url, call("hello", {"who": "ada"}, schemaVersion="1.0.0"),
                  headers("hello")).json()
    assert v2["result"]["content"][0]["text"] == "hello v2 ada"
    assert v1["result"]["content"][0]["text"] == "hello ada"
    code, entries = tk_json(tmp_path, "audit", "--registry", f"sqlite://{db}")
    assert code == 0 and [(e["action"], e["version"]) for e in entries] == [
        ("publish", "1.0.0"), ("publish", "2.0.0")]


def test_handlers_are_also_named_by_module_and_attribute_on_the_python_path(
        tmp_path: Path) -> None:
    _estate(tmp_path)
    with serving(tmp_path, "--estate", "my-contracts", "--handlers", "my_tools:HANDLERS",
                 "--registry", "memory:", "--port", "0", PYTHONPATH=str(tmp_path)) as url:
        answer = post(url, call("hello", {"who": "bo", "loud": False}), headers("hello")).json()
    assert answer["result"]["content"][0]["text"] == "hello v2 bo"


def test_an_estate_older_than_the_registry_is_refused_by_the_guard_with_exit_1(
        tmp_path: Path) -> None:
    _estate(tmp_path)
    url = f"sqlite://{tmp_path / 'r.db'}"
    newer = tmp_path / "hello-3.yaml"
    newer.write_text(HELLO.format(version="3.0.0", description="Greets.").replace(
        "required: [who]", "required: [who, when]"))
    assert tk(tmp_path, "publish", str(newer), "--registry", url)[0] == 0
    code, out, err = tk(tmp_path, "serve", "--estate", "my-contracts", "--registry", url,
                        "--stdio", stdin="")
    assert (code, out) == (1, "")
    assert "[publish.not_monotonic]" in err and "Traceback" not in err


def test_an_estate_file_changed_after_it_was_published_is_refused_not_silently_ignored(
        tmp_path: Path) -> None:
    _estate(tmp_path)
    url = f"sqlite://{tmp_path / 'r.db'}"
    assert tk(tmp_path, "serve", "--estate", "my-contracts", "--registry", url, "--stdio",
              stdin="")[0] == 0
    (tmp_path / "my-contracts" / "hello-1.yaml").write_text(
        HELLO.format(version="1.0.0", description="Greets warmly."))
    code, _, err = tk(tmp_path, "publish", str(tmp_path / "my-contracts" / "hello-1.yaml"),
                      "--registry", url)
    assert code == 1 and "[publish.immutable]" in err  # what publish says of this very file
    code, _, err = tk(tmp_path, "serve", "--estate", "my-contracts", "--registry", url,
                      "--stdio", stdin="")
    assert code == 1 and "[publish.immutable]" in err


@pytest.mark.parametrize(("files", "code"), [
    ({}, "cli.estate_empty"),
    ({"bad.json": '{"name": "x"}'}, "contract.missing_key"),
    ({"extra.yaml": HELLO.format(version="1.0.0", description="d") + "owner: me\n"},
     "contract.unknown_key"),
])
def test_a_bad_estate_directory_exits_2_with_a_stable_code(tmp_path: Path, files: dict[str, str],
                                                           code: str) -> None:
    estate = tmp_path / "estate"
    estate.mkdir()
    for name, text in files.items():
        (estate / name).write_text(text)
    status, out, err = tk(tmp_path, "serve", "--estate", "estate", "--registry", "memory:",
                          "--stdio", stdin="")
    assert (status, out) == (2, "")
    assert f"[{code}]" in err and "Traceback" not in err


def test_the_conformance_example_command_serves_its_estate(tmp_path: Path) -> None:
    with serving(ROOT, "--registry", f"sqlite://{tmp_path / 'conformance.db'}",
                 "--estate", "examples/conformance/contracts",
                 "--handlers", "examples/conformance/handlers.py:HANDLERS",
                 "--port", "0") as url:
        tools = post(url, LIST, headers("", "tools/list")).json()["result"]["tools"]
        answer = post(url, call("test_simple_text", {}), headers("test_simple_text")).json()
    names = sorted(p.stem for p in (EXAMPLES / "conformance" / "contracts").glob("*.json"))
    assert sorted(t["name"] for t in tools) == names
    assert answer["result"]["content"][0]["text"] == "This is a simple text response for testing."


# --- serve's HTTP options ------------------------------------------------------------------------

def test_allow_host_and_allow_origin_extend_the_dns_rebinding_allow_lists(
        tmp_path: Path) -> None:
    foreign = headers("", "tools/list", host="tools.internal:8443")
    cross = headers("", "tools/list", origin="https://console.example")
    with serving(tmp_path, "--registry", "memory:", "--port", "0") as url:
        assert (post(url, LIST, foreign).status_code, post(url, LIST, cross).status_code) == (
            421, 403)
    with serving(tmp_path, "--registry", "memory:", "--port", "0",
                 "--allow-host", "tools.internal:*",
                 "--allow-origin", "https://console.example") as url:
        assert (post(url, LIST, foreign).status_code, post(url, LIST, cross).status_code) == (
            200, 200)


def test_json_response_answers_json_where_the_default_streams_and_accepts_json_only_clients(
        tmp_path: Path) -> None:
    body = call("payments.lookup", {"reference": "PMT-771"}, progressToken="p1")
    json_only = headers("payments.lookup", accept="application/json")
    with serving(tmp_path, "--demo", "--registry", "memory:", "--port", "0") as url:
        streamed = post(url, body, headers("payments.lookup"))
        refused = post(url, body, json_only)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert refused.status_code == 406
    with serving(tmp_path, "--demo", "--registry", "memory:", "--port", "0",
                 "--json-response") as url:
        plain = post(url, body, headers("payments.lookup"))
        only = post(url, body, json_only)
    for response in (plain, only):
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["result"]["content"][0]["text"].startswith("PMT-771:")


# --- The registry CLI, walked through with examples/ ---------------------------------------------

def test_the_registry_walkthrough_with_the_example_contracts(tmp_path: Path) -> None:
    files = [str(EXAMPLES / f) for f in ("payments.lookup.json", "db.query-3.0.0.json",
                                         "db.query-4.0.0.json")]
    code, out, _ = tk(tmp_path, "publish", *files, "--actor", "alice")
    assert code == 0 and [line.split()[:3] for line in out.splitlines()] == [
        ["published", "payments.lookup", "1.0.0"], ["published", "db.query", "3.0.0"],
        ["published", "db.query", "4.0.0"]]
    code, record = tk_json(tmp_path, "deprecate", "db.query", "3.0.0", "--message", "use 4",
                           "--successor", "4.0.0")
    assert (code, record["status"], record["successor"]) == (0, "deprecated", "4.0.0")
    code, record = tk_json(tmp_path, "retire", "db.query", "3.0.0")
    assert (code, record["status"]) == (0, "retired")
    who = ("--tenant", "acme", "--scope", "db.query", "--clearance", "internal")
    code, found = tk_json(tmp_path, "discover", *who)
    assert (code, [(r["name"], r["version"]) for r in found]) == (0, [("db.query", "4.0.0")])
    code, found = tk_json(tmp_path, "discover", "--tenant", "acme", "--scope", "db.query",
                          "--scope", "payments.read", "--clearance", "confidential")
    assert [r["name"] for r in found] == ["db.query", "payments.lookup"]
    code, entries = tk_json(tmp_path, "audit")
    assert code == 0 and [(e["action"], e["actor"]) for e in entries] == [
        ("publish", "alice"), ("publish", "alice"), ("publish", "alice"),
        ("deprecate", "anonymous"), ("retire", "anonymous")]


def test_discover_offers_a_deprecated_newest_version_only_with_include_deprecated(
        tmp_path: Path) -> None:
    tk(tmp_path, "publish", str(EXAMPLES / "db.query-4.0.0.json"))
    assert tk(tmp_path, "deprecate", "db.query", "4.0.0")[0] == 0
    who = ("--tenant", "acme", "--scope", "db.query", "--clearance", "internal")
    assert tk_json(tmp_path, "discover", *who) == (0, [])
    code, found = tk_json(tmp_path, "discover", *who, "--include-deprecated")
    assert (code, [(r["version"], r["status"]) for r in found]) == (0, [("4.0.0", "deprecated")])


def test_publish_json_prints_each_stored_record_then_the_refusal_and_stops_there(
        tmp_path: Path) -> None:
    v3, v4 = EXAMPLES / "db.query-3.0.0.json", EXAMPLES / "db.query-4.0.0.json"
    minor = tmp_path / "db.query-3.1.0.json"  # the breaking 4.0.0 contract labelled 3.1.0
    minor.write_text(v4.read_text().replace('"4.0.0"', '"3.1.0"'))
    code, out, _ = tk(tmp_path, "publish", str(v3), str(minor), str(v4), "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [line.get("version") for line in lines[:-1]] == ["3.0.0"]
    error = lines[-1]["error"]
    assert (error["rule"], error["bump"], error["minimumVersion"]) == (
        "publish.bump_required", "major", "4.0.0")
    code, versions = tk_json(tmp_path, "versions", "db.query")
    assert (code, [v["version"] for v in versions]) == (0, ["3.0.0"])  # 4.0.0 never tried


def test_a_read_command_on_a_fresh_machine_says_no_registry_with_exit_2(tmp_path: Path) -> None:
    code, out = tk_json(tmp_path, "audit")
    assert (code, out["error"]["code"]) == (2, "registry.missing")
    assert out["error"]["data"]["path"] == str(default_db(tmp_path))


# --- The contracts CLI and the validation semantics -----------------------------------------------

def test_validate_reads_arguments_from_stdin_and_exits_0_1_2(tmp_path: Path) -> None:
    contract = str(EXAMPLES / "payments.lookup.json")
    assert tk(tmp_path, "validate", contract, "-", stdin='{"reference": "PMT-100"}')[0] == 0
    code, out, _ = tk(tmp_path, "validate", contract, "-", "--json",
                      stdin=(EXAMPLES / "payments.lookup.bad-args.json").read_text())
    assert code == 1 and len(json.loads(out)["errors"]) == 3
    code, out, _ = tk(tmp_path, "validate", contract, "-", "--json", stdin="{nope")
    assert (code, json.loads(out)["error"]["code"]) == (2, "json.invalid")


SCHEMA = json.dumps({"type": "object", "properties": {
    "n": {"type": "integer", "minimum": 3}, "x": {"type": "number"}}})
# property: (schema, argument, the error keywords it must yield)
SEMANTICS: dict[str, tuple[dict[str, Any], Any, list[str]]] = {
    "float_for_integer": ({"type": "integer"}, 5.0, ["type"]),
    "one_point_zero": ({"type": "integer", "minimum": 3}, 1.0, ["type"]),
    "bool_for_integer": ({"type": "integer"}, True, ["type"]),
    "wrong_type_once": ({"type": "integer", "minimum": 3}, "abc", ["type"]),
    "int_for_number": ({"type": "number"}, 5, []),
    "bool_for_number": ({"type": "number"}, False, ["type"]),
    "two_to_the_70": ({"type": "integer", "minimum": 2**70}, 2**70, []),
    "past_2_to_the_70": ({"type": "integer", "maximum": 2**70}, 2**70 + 1, ["maximum"]),
}


def test_the_readme_validation_semantics_hold_on_the_cli(tmp_path: Path) -> None:
    """integer rejects floats and booleans, number accepts integers and rejects booleans, a
    wrong type is one error (no minimum noise), integers are exact at any size."""
    (tmp_path / "s.json").write_text(json.dumps({"type": "object", "properties": {
        name: schema for name, (schema, _, _) in SEMANTICS.items()}}))
    arguments = json.dumps({name: value for name, (_, value, _) in SEMANTICS.items()})
    code, out = tk_json(tmp_path, "validate", "s.json", arguments)
    assert code == 1
    assert [(e["path"], e["keyword"]) for e in out["errors"]] == sorted(
        (f"$.{name}", keyword) for name, (_, _, keywords) in SEMANTICS.items()
        for keyword in keywords)


def test_repair_turns_an_integral_float_into_an_int_and_reports_what_remains(
        tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(SCHEMA)
    code, out = tk_json(tmp_path, "validate", "s.json", '{"n": 5.0}', "--repair")
    assert code == 0
    assert (out["valid"], out["repaired"], out["errors"]) == (True, {"n": 5}, [])
    assert out["repairs"] == [{"path": "$.n", "rule": "coerce.integral_float",
                               "before": 5.0, "after": 5}]
    code, out = tk_json(tmp_path, "validate", "s.json", '{"n": 1.0}', "--repair")
    assert code == 1 and [(e["path"], e["keyword"]) for e in out["errors"]] == [
        ("$.n", "minimum")]


def test_assert_formats_makes_format_an_assertion_and_defaults_to_false(tmp_path: Path) -> None:
    base = json.loads((EXAMPLES / "payments.lookup.json").read_text())
    base["inputSchema"]["properties"]["on"] = {"type": "string", "format": "date"}
    (tmp_path / "lax.json").write_text(json.dumps(base))
    (tmp_path / "strict.json").write_text(json.dumps({**base, "assertFormats": True}))
    arguments = '{"reference": "PMT-100", "on": "not a date"}'
    assert tk_json(tmp_path, "validate", "lax.json", arguments)[0] == 0
    code, out = tk_json(tmp_path, "validate", "strict.json", arguments)
    assert code == 1 and [(e["path"], e["keyword"]) for e in out["errors"]] == [("$.on", "format")]


def test_an_unknown_contract_key_is_refused_with_its_path_and_a_stable_code(
        tmp_path: Path) -> None:
    contract = json.loads((EXAMPLES / "payments.lookup.json").read_text())
    (tmp_path / "c.json").write_text(json.dumps({**contract, "owner": "payments-team"}))
    code, out = tk_json(tmp_path, "publish", "c.json")
    assert (code, out["error"]["code"], out["error"]["path"]) == (
        2, "contract.unknown_key", "$.owner")
    assert not default_db(tmp_path).exists()


def test_diff_of_the_db_query_examples_is_major_with_exit_0(tmp_path: Path) -> None:
    code, out = tk_json(tmp_path, "diff", str(EXAMPLES / "db.query-3.0.0.json"),
                        str(EXAMPLES / "db.query-4.0.0.json"))
    assert code == 0 and out["bump"] == "major"
    assert all(set(c) == {"rule", "path", "bump", "reason"} for c in out["changes"])



def test_the_anonymous_local_principal_sees_every_contract_except_tenant_limited_ones(
        tmp_path: Path) -> None:
    """docs/handlers.md: "a local anonymous principal sees the whole estate"; server/principal.py adds
    "except contracts restricted to named tenants", which is what happens (and serve has no
    option to configure another principal)."""
    estate = tmp_path / "estate"
    estate.mkdir()
    extras: dict[str, dict[str, Any]] = {
        "open": {}, "secret": {"dataClassification": "restricted", "requiredScopes": ["v.r"]},
        "acme": {"tenants": ["acme"]}}
    for name, extra in extras.items():
        (estate / f"{name}.json").write_text(json.dumps({
            "name": f"t.{name}", "version": "1.0.0", "title": name, "description": name,
            "inputSchema": {"type": "object"}, "dataClassification": "public",
            "sideEffect": "read", **extra}))
    (tmp_path / "every_tool.py").write_text(  # a gateway lists only what it can run
        "from toolkeeper.server import ToolHandlers\nhandlers = ToolHandlers()\n"
        "for _name in ('t.open', 't.secret', 't.acme'):\n"
        "    handlers.bind(_name, lambda arguments: 'ran')\n")
    code, out, err = tk(tmp_path, "serve", "--estate", "estate", "--registry", "memory:",
                        "--handlers", "every_tool.py:handlers",
                        "--stdio", stdin=json.dumps(LIST) + "\n")
    assert code == 0, err
    assert [t["name"] for t in json.loads(out)["result"]["tools"]] == ["t.open", "t.secret"]


@pytest.mark.parametrize(("change", "code", "path"), [
    ({"title": None}, "contract.missing_key", "$.title"),
    ({"version": "1.0"}, "contract.version", "$.version"),
    ({"outputSchema": {"type": "objekt"}}, "contract.schema", "$.outputSchema"),
])
def test_a_bad_contract_value_is_refused_on_publish_with_its_path_and_a_stable_code(
        tmp_path: Path, change: dict[str, Any], code: str, path: str) -> None:
    contract = json.loads((EXAMPLES / "payments.lookup.json").read_text())
    contract.update(change)
    (tmp_path / "c.json").write_text(json.dumps({k: v for k, v in contract.items()
                                                 if v is not None}))
    status, out = tk_json(tmp_path, "publish", "c.json")
    assert (status, out["error"]["code"], out["error"]["path"]) == (2, code, path)
