"""``serve``'s configuration: a flag typed on the command line overrides the file's key, a flag
left at its default does not, and the anonymous principal is refused on a host that is not
loopback (``--auth none`` included), exit 2 before anything is served."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkeeper.cli.serve_cmd import serve
from toolkeeper.cli.serve_config import config_from_flags
from toolkeeper.config import GatewayConfig
from toolkeeper.errors import ConfigError

FILE = """\
[registry]
url = "memory:"
[server]
host = "127.0.0.2"
port = 9001
allowed_hosts = ["from-file:*"]
head_timeout_s = 3.0
[logging]
level = "warning"
format = "json"
[metrics]
port = 9464
"""


def _config(tmp_path: Path, *args: str, text: str = FILE) -> GatewayConfig:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    ctx = serve.make_context("serve", ["--config", str(path), *args])
    return config_from_flags(ctx, ctx.params["config_path"])


def test_the_file_stands_where_no_flag_is_typed(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert (config.server.host, config.server.port, config.server.head_timeout_s) == (
        "127.0.0.2", 9001, 3.0)
    assert (config.logging.level, config.logging.format, config.metrics.port) == (
        "warning", "json", 9464)


def test_typed_flags_override_the_file(tmp_path: Path) -> None:
    config = _config(tmp_path, "--port", "9002", "--host", "::1", "--head-timeout", "7",
                     "--log-level", "debug", "--log-format", "text", "--metrics-port", "0",
                     "--allow-host", "a:*", "--allow-host", "b:*", "--registry", "sqlite:///x.db",
                     "--legacy-sessions", "stateless", "--json-response", "--stdio")
    assert (config.server.host, config.server.port, config.server.head_timeout_s) == (
        "::1", 9002, 7.0)
    assert (config.logging.level, config.logging.format, config.metrics.port) == (
        "debug", "text", 0)
    assert config.server.allowed_hosts == ("a:*", "b:*")  # a repeatable flag replaces the list
    assert (config.registry.url, config.server.legacy_sessions) == ("sqlite:///x.db",
                                                                   "stateless")
    assert (config.server.json_response, config.server.transport) == (True, "stdio")


def test_a_flag_typed_at_its_default_value_still_overrides_the_file(tmp_path: Path) -> None:
    assert _config(tmp_path, "--port", "8000").server.port == 8000


def test_estate_and_handler_flags_resolve_against_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "contracts").mkdir()
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path, "--estate", "contracts", "--handlers", "tools.py:handlers")
    assert config.estate.dirs == (str(tmp_path / "contracts"),)
    assert config.estate.handlers == (f"{tmp_path / 'tools.py'}:handlers",)


def test_without_a_file_the_flags_and_defaults_are_the_configuration(tmp_path: Path) -> None:
    ctx = serve.make_context("serve", ["--port", "0", "--demo"])
    config = config_from_flags(ctx, None)
    assert (config.server.port, config.estate.demo, config.server.host) == (0, True, "127.0.0.1")


@pytest.mark.parametrize("auth", [[], ["--auth", "none"]])
def test_the_anonymous_principal_on_a_non_loopback_host_exits_2(auth: list[str]) -> None:
    result = CliRunner().invoke(serve, ["--registry", "memory:", "--host", "0.0.0.0", *auth])
    assert result.exit_code == 2
    assert "[config.anonymous_not_loopback]" in result.stderr and "auth.methods" in result.stderr


def test_a_non_loopback_host_from_the_file_is_refused_without_auth(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, "--host", "192.0.2.10")
    assert (caught.value.code, caught.value.data["key"]) == (
        "config.anonymous_not_loopback", "auth.methods")


def test_auth_none_overrides_the_files_methods_and_is_refused_off_loopback(
        tmp_path: Path) -> None:
    text = ('[server]\nhost = "0.0.0.0"\n[auth]\nmethods = ["jwt"]\n'
            'resource = "https://gw.example/mcp"\n[[auth.jwt.issuers]]\n'
            'issuer = "https://i"\njwks_url = "https://i/jwks"\n')
    assert _config(tmp_path, text=text).auth.methods == ("jwt",)
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, "--auth", "none", text=text)
    assert caught.value.code == "config.anonymous_not_loopback"


def test_auth_none_cannot_be_combined_with_a_credential_method(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, "--auth", "none", "--auth", "keys")
    assert (caught.value.code, caught.value.data["key"]) == ("config.not_allowed",
                                                             "auth.methods")


def test_a_bad_flag_value_names_the_key_it_overrides(tmp_path: Path) -> None:
    result = CliRunner().invoke(serve, ["--registry", "ftp://nowhere"])
    assert result.exit_code == 2 and "[config.bad_url]" in result.stderr
    assert "registry.url" in result.stderr
