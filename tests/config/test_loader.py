"""The configuration loader: every broken file is refused with a stable ``config.*`` code and
the dotted key, and ``serve --config`` exits 2 naming it without a traceback; the shipped
example loads."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkeeper.cli.serve_cmd import serve
from toolkeeper.cli.sources import read_source
from toolkeeper.config import GatewayConfig, load_config, parse_config
from toolkeeper.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]

BROKEN: list[tuple[str, str, str]] = [
    ('[server]\nprot = 8000\n', "config.unknown_key", "server.prot"),
    ('[servers]\nport = 8000\n', "config.unknown_key", "servers"),
    ('[limits.tools."db.query"]\ntimeout = 1.0\n', "config.unknown_key",
     'limits.tools."db.query".timeout'),
    ('[server]\nport = "8000"\n', "config.wrong_type", "server.port"),
    ('[server]\njson_response = 1\n', "config.wrong_type", "server.json_response"),
    ('[estate]\ndirs = "contracts"\n', "config.wrong_type", "estate.dirs"),
    ('[estate]\nhandlers = ["a:b", 3]\n', "config.wrong_type", "estate.handlers[1]"),
    ('server = 1\n', "config.wrong_type", "server"),
    ('[auth.jwt]\nissuers = [1]\n', "config.wrong_type", "auth.jwt.issuers"),
    ('[server]\nport = 70000\n', "config.out_of_range", "server.port"),
    ('[server]\nhead_timeout_s = 0\n', "config.out_of_range", "server.head_timeout_s"),
    ('[server]\nidle_timeout_s = nan\n', "config.out_of_range", "server.idle_timeout_s"),
    ('[limits.tenants.acme]\nconcurrency = -1\n', "config.out_of_range",
     "limits.tenants.acme.concurrency"),
    ('[logging]\nformat = "xml"\n', "config.not_allowed", "logging.format"),
    ('[auth]\nmethods = ["keys", "password"]\n', "config.not_allowed", "auth.methods[1]"),
    ('[[auth.jwt.issuers]]\nissuer = "https://i"\nalgorithms = ["none"]\n',
     "config.not_allowed", "auth.jwt.issuers[0].algorithms[0]"),
    ('[registry]\nurl = "http://db.example/registry"\n', "config.bad_url", "registry.url"),
    ('[auth]\nresource = "gateway.example/mcp"\n', "config.bad_url", "auth.resource"),
    ('[auth]\nauthorization_servers = ["https://ok", "ftp://idp"]\n', "config.bad_url",
     "auth.authorization_servers[1]"),
    ('[[auth.jwt.issuers]]\nissuer = "https://i"\njwks_url = "https://idp:port/jwks"\n',
     "config.bad_url", "auth.jwt.issuers[0].jwks_url"),
    ('[[auth.jwt.issuers]]\nissuer = "https://a"\njwks_file = "jwks.json"\n'
     '[[auth.jwt.issuers]]\nissuer = "https://b"\nalgorithms = ["HS256"]\n'
     'secret_file = "no-such-secret"\n',
     "config.unreadable_file", "auth.jwt.issuers[1].secret_file"),
    ('[[auth.jwt.issuers]]\npublic_key_file = "jwks.json"\n', "config.missing_key",
     "auth.jwt.issuers[0].issuer"),
    ('[[auth.jwt.issuers]]\nissuer = "https://i"\nalgorithms = ["HS256"]\n'
     'jwks_file = "jwks.json"\n', "config.issuer_key_missing",
     "auth.jwt.issuers[0].algorithms"),
    ('[auth]\nmethods = ["jwt"]\n', "config.jwt_without_issuer", "auth.jwt.issuers"),
    ('[estate]\ndirs = ["jwks.json"]\n', "config.bad_path", "estate.dirs[0]"),
    ('[estate]\nhandlers = ["no_attribute"]\n', "config.bad_value", "estate.handlers[0]"),
    ('[server]\npath = "mcp"\n', "config.bad_value", "server.path"),
    ('[server]\nhost = "0.0.0.0"\n', "config.anonymous_not_loopback", "auth.methods"),
    ('[server]\nport = 0\n[auth]\nmethods = ["keys"]\n', "config.resource_needed",
     "auth.resource"),
    ('[server]\nhost = "0.0.0.0"\n[auth]\nmethods = ["jwt"]\n[[auth.jwt.issuers]]\n'
     'issuer = "https://a"\njwks_file = "jwks.json"\naudience = "https://gw/mcp"\n'
     '[[auth.jwt.issuers]]\nissuer = "https://b"\njwks_file = "jwks.json"\n',
     "config.resource_needed", "auth.resource"),
    ('[[auth.jwt.issuers]]\nissuer = "https://i"\nalgorithms = ["HS256"]\n'
     'secret_file = "short-secret"\n', "config.bad_value", "auth.jwt.issuers[0].secret_file"),
    ('[server]\nport = \n', "config.not_toml", ""),
    ('[sealing]\nkeys_file = "no-such-keys"\n', "config.unreadable_file", "sealing.keys_file"),
    ('[sealing]\nkeys_file = "short-key"\n', "config.bad_value", "sealing.keys_file"),
    ('[sealing]\nkeys_file = "jwks.json"\n', "config.bad_value", "sealing.keys_file"),
    ('[server]\nlist_page_size = 0\n', "config.out_of_range", "server.list_page_size"),
    ('[server]\nlist_cursor_ttl_s = 0\n', "config.out_of_range", "server.list_cursor_ttl_s"),
]


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    (tmp_path / "jwks.json").write_text('{"keys": []}')
    (tmp_path / "short-secret").write_bytes(b"x" * 31 + b"\n")  # one byte short of HS256's 32
    (tmp_path / "short-key").write_text(base64.b64encode(b"k" * 31).decode() + "\n")
    return tmp_path


def _write(directory: Path, text: str | bytes) -> str:
    path = directory / "gateway.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


@pytest.mark.parametrize(("text", "code", "key"), BROKEN)
def test_a_broken_file_is_refused_with_its_code_and_dotted_key(
        config_dir: Path, text: str, code: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(config_dir, text), read=read_source)
    assert (caught.value.code, caught.value.data["key"]) == (code, key)


@pytest.mark.parametrize(("text", "code", "key"), BROKEN)
def test_serve_refuses_a_broken_file_with_exit_2_naming_the_key(
        config_dir: Path, text: str, code: str, key: str) -> None:
    result = CliRunner().invoke(serve, ["--config", _write(config_dir, text)])
    assert result.exit_code == 2
    assert f"[{code}]" in result.stderr and key in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_a_file_that_is_not_utf8_is_refused_as_a_whole(config_dir: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(config_dir, b'[server]\nhost = "\xff"\n'), read=read_source)
    assert (caught.value.code, caught.value.data["key"]) == ("config.not_utf8", "")
    assert caught.value.data["offset"] == 17


def test_a_missing_configuration_file_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(str(tmp_path / "absent.toml"), read=read_source)
    assert (caught.value.code, caught.value.data["key"]) == ("config.unreadable", "")


def test_a_key_file_that_is_a_directory_is_refused_at_load(config_dir: Path) -> None:
    text = (f'[[auth.jwt.issuers]]\nissuer = "https://i"\nalgorithms = ["ES256"]\n'
            f'public_key_file = "{config_dir}"\n')
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert (caught.value.code, caught.value.data["key"]) == (
        "config.unreadable_file", "auth.jwt.issuers[0].public_key_file")


def test_the_shipped_example_loads_with_every_section_typed() -> None:
    config = load_config(str(ROOT / "examples" / "gateway.toml"), read=read_source)
    assert config.auth.methods == ("keys", "jwt")
    issuer = config.auth.jwt_issuers[0]
    assert Path(issuer.jwks_file) == ROOT / "examples" / "keys" / "idp-jwks.json"
    assert config.limits.tenants["acme"].concurrency == 32
    assert config.limits.tools["db.query"].call_timeout_s == 5.0
    assert config.estate.demo is True and config.estate.dirs == ()
    assert config.estate.handlers == (f"{ROOT / 'examples' / 'typed_tools.py'}:handlers",)
    assert config.legacy.max_sessions_per_tenant == 2500
    assert (config.metrics.port, config.logging.format, config.auth.stdio is not None) == (
        9464, "json", True)
    assert (config.sealing.keys_env, config.server.list_page_size) == (
        "TOOLKEEPER_SEALING_KEYS", 100)


def test_an_empty_file_is_every_default_and_no_stdio_principal() -> None:
    config = parse_config("")
    assert config == GatewayConfig()
    assert config.auth.stdio is None


def test_an_integer_for_a_float_key_is_read_as_a_float() -> None:
    value = parse_config("[limits]\nrate_per_s = 5\n").limits.rate_per_s
    assert (value, type(value)) == (5.0, float)


def test_a_present_stdio_table_gives_its_principal_with_defaults() -> None:
    stdio = parse_config("[auth.stdio]\nscopes = [\"db:read\"]\n").auth.stdio
    assert stdio is not None
    assert (stdio.tenant, stdio.scopes, stdio.clearance) == ("local", ("db:read",), "restricted")


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "localhost"])
def test_the_anonymous_principal_is_allowed_on_every_loopback_host(host: str) -> None:
    assert parse_config(f'[server]\nhost = "{host}"\n').server.host == host


@pytest.mark.parametrize(("host", "resource", "audience"), [
    ("0.0.0.0", "https://gw.example/mcp", ""),
    ("0.0.0.0", "", "https://gw.example/mcp"),
    ("127.0.0.1", "", ""),
], ids=["resource", "every-audience", "loopback"])
def test_jwt_on_a_public_host_loads_with_a_resource_or_every_audience_or_on_loopback(
        config_dir: Path, host: str, resource: str, audience: str) -> None:
    text = (f'[server]\nhost = "{host}"\n[auth]\nmethods = ["jwt"]\nresource = "{resource}"\n'
            f'[[auth.jwt.issuers]]\nissuer = "https://a"\njwks_file = "jwks.json"\n'
            f'audience = "{audience}"\n')
    assert load_config(_write(config_dir, text), read=read_source).auth.methods == ("jwt",)


def test_a_non_loopback_stdio_server_needs_no_auth_methods() -> None:
    text = '[server]\ntransport = "stdio"\nhost = "0.0.0.0"\n'
    assert parse_config(text).server.transport == "stdio"
