"""Entry point: the click group and the registration of every command module."""

from __future__ import annotations

import click

from toolkeeper.cli import (
    call_cmd,
    calls_cmd,
    client_config_cmd,
    conformance_cmd,
    conformance_evidence_cmd,
    contracts_cmds,
    diff_cmd,
    export_cmd,
    gate_cmds,
    keys_cmd,
    registry_cmds,
    release_cmds,
    release_status_cmd,
    release_watch_cmd,
    serve_cmd,
    token_cmd,
    tools_cmd,
    upstream_cmds,
)
from toolkeeper.cli.usage import ToolkeeperGroup

__all__ = ["cli", "main"]


@click.group(cls=ToolkeeperGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolkeeper")
def cli() -> None:
    """toolkeeper: a contract-governed MCP tool registry and gateway."""


for _module in (contracts_cmds, export_cmd, diff_cmd, registry_cmds, serve_cmd, keys_cmd,
                calls_cmd, tools_cmd, call_cmd, conformance_cmd, conformance_evidence_cmd,
                client_config_cmd, token_cmd, upstream_cmds, gate_cmds, release_cmds,
                release_status_cmd, release_watch_cmd):
    _module.register(cli)


def main() -> None:
    cli(prog_name="toolkeeper")
