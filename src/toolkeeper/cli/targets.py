"""The options that name an MCP endpoint and the era to speak, shared by every client command.

One spelling everywhere (``tools``, ``call``, ``conformance run``):

* ``--url URL``: a Streamable HTTP endpoint. ``tools`` and ``call`` also take the URL as
  their first word, as they always have.
* ``--stdio CMD``: a command serving MCP on stdin/stdout, given as one string and split as a
  shell would (``--stdio "toolkeeper serve --demo --stdio"``). Words after ``--`` are appended
  to it as they are, so ``--stdio -- CMD ARG...`` (no string) keeps working and passes an
  argument holding spaces untouched.
* ``--era auto|modern|legacy`` (:class:`EraType`); the dated names ``2026-07-28`` and
  ``2025-11-25`` are accepted as aliases of ``modern`` and ``legacy``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click
from click.shell_completion import CompletionItem

from toolkeeper.client import Target
from toolkeeper.errors import ClientError
from toolkeeper.protocol.versions import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

__all__ = ["ERAS", "ERA_ALIASES", "TOKEN_ENV", "EraType", "client_options", "era_option",
           "era_policy", "stdio_argv", "stdio_option", "target_of", "url_option"]

TOKEN_ENV: Final = "TOOLKEEPER_TOKEN"
ERAS: Final = ("auto", "modern", "legacy")
ERA_ALIASES: Final[Mapping[str, str]] = MappingProxyType({
    LATEST_MODERN_VERSION: "modern", LATEST_HANDSHAKE_VERSION: "legacy"})
"""The dated era names each command also accepts, and the era each names."""
_F = TypeVar("_F", bound=Callable[..., Any])

if TYPE_CHECKING:
    _Choice = click.Choice[str]
else:  # click.Choice is generic from click 8.2 on; the package supports 8.1
    _Choice = click.Choice


class EraType(_Choice):
    """``auto``, ``modern`` or ``legacy``; a dated alias converts to the era it names."""

    name = "era"

    def __init__(self) -> None:
        super().__init__([*ERAS, *ERA_ALIASES])

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(ERAS) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> str:
        chosen = super().convert(value, param, ctx)
        return ERA_ALIASES.get(chosen, chosen)

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str
                       ) -> list[CompletionItem]:
        return [CompletionItem(era) for era in ERAS if era.startswith(incomplete)]


def era_option(help_text: str) -> Callable[[_F], _F]:
    return click.option("--era", type=EraType(), default="auto", show_default=True,
                        help=help_text + f" The dated names {LATEST_MODERN_VERSION} and "
                        f"{LATEST_HANDSHAKE_VERSION} are aliases of modern and legacy.")


def url_option(help_text: str = "A Streamable HTTP endpoint.") -> Callable[[_F], _F]:
    return click.option("--url", default=None, metavar="URL", help=help_text)


def stdio_option() -> Callable[[_F], _F]:
    # An option whose value may be left out: ``--stdio -- CMD ARG...`` gives the empty string.
    return click.option("--stdio", default=None, is_flag=False, flag_value="", metavar="CMD",
                        help="A command serving MCP on stdin/stdout, as one string (split as "
                             "a shell would); words after -- are appended as they are.")


def stdio_argv(command: str, words: Sequence[str]) -> list[str]:
    """The argv of ``--stdio CMD`` and the words given after it (ClientError
    ``client.bad_target`` when ``CMD`` is not quoted correctly or the whole is empty)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        raise ClientError("--stdio: the command is not shell-quoted correctly",
                          code="client.bad_target") from None
    argv += list(words)
    if not argv:
        raise ClientError("--stdio: the command is empty", code="client.bad_target")
    return argv


def client_options(command: _F) -> _F:
    """The options ``tools`` and ``call`` share: the target words, --url, --stdio, --era,
    --strict, --allow-legacy, --token and --json."""
    for option in reversed((
        click.argument("target", nargs=-1),
        url_option(),
        stdio_option(),
        era_option("auto: modern probe, then a bounded legacy probe when it is inconclusive; "
                   "modern: strict; legacy: legacy only."),
        click.option("--strict", is_flag=True,
                     help="Refuse the legacy fallback: the endpoint must prove the modern "
                          "era (the same as --era modern)."),
        click.option("--allow-legacy", is_flag=True, hidden=True,
                     help="Kept for scripts: the legacy fallback is the default."),
        click.option("--token", envvar=TOKEN_ENV, default=None, metavar="T",
                     help=f"Bearer token for HTTP (env {TOKEN_ENV})."),
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
    )):
        command = option(command)
    return command


def era_policy(era: str, strict: bool, allow_legacy: bool) -> tuple[str, bool]:
    """The ``connect`` era choice and ``legacy_allowed`` of the command line: an endpoint
    named there is explicitly configured, so legacy is allowed unless ``--strict``
    (``cli.bad_input`` for ``--strict`` with ``--era legacy``, or with ``--allow-legacy``)."""
    if strict and (era == "legacy" or allow_legacy):
        raise ClientError("--strict refuses the legacy era: it cannot go with "
                          + ("--era legacy" if era == "legacy" else "--allow-legacy"),
                          code="cli.bad_input")
    if strict:
        return "modern", False
    return era, era != "modern"


def target_of(words: Sequence[str], stdio: str | bool | None, url: str | None = None
              ) -> Target:
    """The endpoint the command line names: ``--url``, ``--stdio`` (with the words after it),
    or one URL word (ClientError ``client.bad_target``). ``stdio`` may be a bool, as the
    former flag was: True is ``--stdio -- CMD ARG...``."""
    if stdio is True:
        stdio = ""
    if isinstance(stdio, str):
        if url is not None:
            raise ClientError("give --url or --stdio, not both", code="client.bad_target")
        return Target.from_stdio(stdio_argv(stdio, words))
    if url is not None:
        if words:
            raise ClientError("--url names the endpoint: no other target word is taken",
                              code="client.bad_target")
        return Target.from_url(url)
    if len(words) != 1:
        raise ClientError("give one URL (or --url URL), or --stdio and a command",
                          code="client.bad_target")
    return Target.from_url(words[0])
