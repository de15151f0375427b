"""``toolkeeper client-config``: the JSON an MCP client reads to reach this gateway
(``docs/operations.md``).

=============  ==============================  =========================================
client         file                            shape
=============  ==============================  =========================================
``claude``     ``claude_desktop_config.json``  ``{"mcpServers": {NAME: {...}}}``
``cursor``     ``.cursor/mcp.json``            ``{"mcpServers": {NAME: {...}}}``
``vscode``     ``.vscode/mcp.json``            ``{"servers": {NAME: {"type": ...}}}``
=============  ==============================  =========================================

Over stdio (the default) the entry starts ``toolkeeper serve --stdio`` by an absolute path
(a client's PATH is not a shell's), with ``--demo`` and ``--config`` as given and the registry
in ``TOOLKEEPER_REGISTRY`` (the environment, not the arguments, so a PostgreSQL password is not
on a process listing). Over HTTP (``--url``) the entry names the endpoint; Claude Desktop's
file holds only commands, so its entry runs the ``mcp-remote`` bridge. A credential is written
only as given: ``--api-key-env NAME`` writes a reference the client resolves (VS Code's
``${input:...}`` prompt when no name is given), ``--api-key KEY`` the key itself; without
either no ``Authorization`` header is written. The output is JSON with sorted keys, the same
for the same options.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, NoReturn

import click

from toolkeeper.cli.output import fail
from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry.location import ENV_VAR

__all__ = ["CLIENTS", "client_config", "register"]

CLIENTS: Final = ("claude", "cursor", "vscode")
_INPUT_ID: Final = "toolkeeper-api-key"
_BRIDGE_VAR: Final = "TOOLKEEPER_AUTHORIZATION"


def _toolkeeper_command() -> list[str]:
    """The absolute command line of this toolkeeper: its console script when this process is
    it, else this interpreter with ``-m toolkeeper``."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "toolkeeper":
        found = shutil.which(str(script)) if not script.is_absolute() else str(script)
        if found:
            return [os.path.abspath(found)]
    return [sys.executable, "-m", "toolkeeper"]


def _absolute_registry(url: str) -> str:
    """A relative SQLite path made absolute: the client starts the server elsewhere."""
    scheme, sep, rest = url.partition(":")
    if sep and scheme.lower() == "sqlite" and rest.startswith("//") and rest[2:] and \
            not Path(rest[2:]).is_absolute():
        return f"sqlite://{Path(rest[2:]).resolve()}"
    return url


def _stdio_entry(*, registry: str | None, demo: bool, config: str | None) -> dict[str, Any]:
    command = _toolkeeper_command()
    args = [*command[1:], "serve", "--stdio"]
    if demo:
        args.append("--demo")
    if config is not None:
        args += ["--config", str(Path(config).resolve())]
    entry: dict[str, Any] = {"command": command[0], "args": args}
    if registry is not None:
        entry["env"] = {ENV_VAR: _absolute_registry(registry)}
    return entry


def _bearer(key: str | None, key_env: str | None) -> str | None:
    if key is not None:
        return f"Bearer {key}"
    return None if key_env is None else f"Bearer ${{env:{key_env}}}"


def _bridge_entry(url: str, key: str | None, key_env: str | None) -> dict[str, Any]:
    """Claude Desktop's: ``mcp-remote`` bridges stdio to the endpoint; it expands ``${VAR}``
    in its arguments from its environment. A key given goes through the entry's ``env``, so
    the header argument holds no space (the bridge's advice for clients on Windows); a
    variable named is referred to in the argument itself."""
    args = ["-y", "mcp-remote", url]
    entry: dict[str, Any] = {"command": "npx", "args": args}
    if key is not None:
        args += ["--header", f"Authorization:${{{_BRIDGE_VAR}}}"]
        entry["env"] = {_BRIDGE_VAR: f"Bearer {key}"}
    elif key_env is not None:
        args += ["--header", f"Authorization:Bearer ${{{key_env}}}"]
    return entry


def client_config(client: str, *, name: str = "toolkeeper", url: str | None = None,
                  registry: str | None = None, demo: bool = False, config: str | None = None,
                  api_key: str | None = None, api_key_env: str | None = None,
                  prompt_for_key: bool = False) -> dict[str, Any]:
    """The configuration document for ``client`` (one of :data:`CLIENTS`)."""
    if url is None:
        entry = _stdio_entry(registry=registry, demo=demo, config=config)
        if client == "vscode":
            return {"servers": {name: {"type": "stdio", **entry}}}
        return {"mcpServers": {name: entry}}
    if client == "vscode" and prompt_for_key:
        return {"inputs": [{"type": "promptString", "id": _INPUT_ID, "password": True,
                            "description": "toolkeeper API key"}],
                "servers": {name: {"type": "http", "url": url, "headers": {
                    "Authorization": f"Bearer ${{input:{_INPUT_ID}}}"}}}}
    if client == "claude":
        return {"mcpServers": {name: _bridge_entry(url, api_key, api_key_env)}}
    remote: dict[str, Any] = {"url": url}
    authorization = _bearer(api_key, api_key_env)
    if authorization is not None:
        remote["headers"] = {"Authorization": authorization}
    if client == "vscode":
        return {"servers": {name: {"type": "http", **remote}}}
    return {"mcpServers": {name: remote}}


def _refuse(message: str, code: str, **data: Any) -> NoReturn:
    fail(ToolkeeperError(message, code=code, data=data))


_HTTP_ONLY: Final[Mapping[str, Callable[[Mapping[str, Any]], bool]]] = {
    "--api-key": lambda o: o["api_key"] is not None,
    "--api-key-env": lambda o: o["api_key_env"] is not None,
    "--prompt-key": lambda o: bool(o["prompt_key"]),
}
_STDIO_ONLY: Final[Mapping[str, Callable[[Mapping[str, Any]], bool]]] = {
    "--registry": lambda o: o["registry"] is not None,
    "--demo": lambda o: bool(o["demo"]),
    "--config": lambda o: o["config"] is not None,
}


@click.command("client-config")
@click.option("--client", type=click.Choice(CLIENTS), default="claude", show_default=True,
              help="Claude Desktop, Cursor or VS Code.")
@click.option("--stdio", "stdio", is_flag=True,
              help="The client starts toolkeeper serve --stdio (the default without --url).")
@click.option("--url", default=None, metavar="URL",
              help="The gateway's Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp.")
@click.option("--name", default="toolkeeper", show_default=True,
              help="The server's name in the client.")
@click.option("--registry", default=None, metavar="URL",
              help="stdio: the registry the started server opens (TOOLKEEPER_REGISTRY).")
@click.option("--demo", is_flag=True, help="stdio: the started server serves the demo estate.")
@click.option("--config", default=None, metavar="FILE",
              help="stdio: the started server's TOML configuration.")
@click.option("--api-key", default=None, metavar="KEY",
              help="HTTP: write this key into the Authorization header (it is then in the file).")
@click.option("--api-key-env", default=None, metavar="NAME",
              help="HTTP: an Authorization header that refers to the environment variable NAME.")
@click.option("--prompt-key", is_flag=True,
              help="HTTP, VS Code: VS Code asks for the key once and keeps it out of the file.")
def client_config_cmd(client: str, stdio: bool, url: str | None, name: str,
                      registry: str | None, demo: bool, config: str | None,
                      api_key: str | None, api_key_env: str | None, prompt_key: bool) -> None:
    """Print the JSON Claude Desktop, Cursor or VS Code reads to use this gateway."""
    options = {"api_key": api_key, "api_key_env": api_key_env, "prompt_key": prompt_key,
               "registry": registry, "demo": demo, "config": config}
    if stdio and url is not None:
        _refuse("--stdio and --url exclude each other", "client_config.conflict",
                options=["--stdio", "--url"])
    given = sorted(flag for flag, on in (_STDIO_ONLY if url is not None else _HTTP_ONLY).items()
                   if on(options))
    if given:
        _refuse(f"{', '.join(given)}: only "
                f"{'over stdio (without --url)' if url is not None else 'with --url'}",
                "client_config.conflict", options=given)
    if sum(bool(x) for x in (api_key, api_key_env, prompt_key)) > 1:
        _refuse("give one of --api-key, --api-key-env, --prompt-key", "client_config.conflict",
                options=["--api-key", "--api-key-env", "--prompt-key"])
    if prompt_key and client != "vscode":
        _refuse("--prompt-key is VS Code's (its inputs); use --api-key-env NAME",
                "client_config.conflict", options=["--prompt-key"], client=client)
    if url is not None and not url.startswith(("http://", "https://")):
        _refuse("--url must be an http:// or https:// URL", "client_config.url_invalid",
                option="--url")
    document = client_config(client, name=name, url=url, registry=registry, demo=demo,
                             config=config, api_key=api_key, api_key_env=api_key_env,
                             prompt_for_key=prompt_key)
    click.echo(json.dumps(document, indent=2, sort_keys=True))


def register(group: click.Group) -> None:
    """Add ``client-config`` to ``group``."""
    group.add_command(client_config_cmd)
