"""``toolkeeper contracts``: the contract commands under one group (``validate``, ``repair``,
``diff``, ``export``), and the top-level spellings kept as aliases.

``toolkeeper validate`` and ``toolkeeper diff`` were top-level commands before the group
held them; :func:`alias` registers the very same command under its old name, so both
spellings take the same options and give the same output and exit codes.
"""

from __future__ import annotations

import copy

import click

from toolkeeper.cli.usage import ToolkeeperGroup

__all__ = ["alias", "contracts_group"]


@click.group("contracts", cls=ToolkeeperGroup)
def contracts_group() -> None:
    """Contracts: validate and repair arguments, classify changes, export typed tools."""


def alias(group: click.Group, command: click.Command) -> None:
    """Add ``command`` to ``group`` under its own name, labelled as the alias of
    ``contracts NAME`` in the group's help."""
    twin = copy.copy(command)
    twin.short_help = f"The same as 'contracts {command.name}'."
    group.add_command(twin)
