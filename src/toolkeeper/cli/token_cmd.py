"""``toolkeeper token mint``: a development JWT for an issuer of the gateway's configuration.

``toolkeeper token mint --config FILE --issuer ISS --tenant T [--scope S]... [--clearance C]
[--subject SUB] [--lifetime SECONDS] [--audience AUD] [--kid KID] [--json]`` reads the same
TOML file ``serve --config`` reads, finds the ``[[auth.jwt.issuers]]`` whose ``issuer`` is
ISS, and signs a token with that issuer's local key (:mod:`toolkeeper.auth.dev_tokens`): a
gateway started with the file accepts it. The audience is the issuer's ``audience``, else
``auth.resource``, else the URL the file's listen address derives (``--audience`` replaces
it). The token is printed on stdout (``--json``: an object with ``token``, ``header``,
``claims``, ``development: true``), and one line on stderr says it is for development.

Exit codes: 0 minted; 1 refused (``token.no_local_key``, ``token.key_mismatch``,
``token.tenant_not_allowed``, ``token.lifetime_too_long``); 2 bad input (the configuration,
``token.unknown_issuer``, ``token.key_unreadable``, a bad tenant, scope or clearance).
"""

from __future__ import annotations

import datetime as _dt
import time
from typing import Final

import click

from toolkeeper.auth.dev_tokens import mint_dev_token
from toolkeeper.auth.metadata import default_resource
from toolkeeper.cli.output import EXIT_BAD_INPUT, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.sources import read_source
from toolkeeper.cli.usage import ToolkeeperGroup
from toolkeeper.config import GatewayConfig, load_config
from toolkeeper.config.model import JwtIssuerSettings
from toolkeeper.errors import ToolkeeperError

__all__ = ["register", "token_group"]

_REFUSALS: Final = frozenset({"token.no_local_key", "token.key_mismatch",
                              "token.tenant_not_allowed", "token.lifetime_too_long"})
DEFAULT_LIFETIME_S: Final = 3600


def _issuer(config: GatewayConfig, name: str) -> JwtIssuerSettings:
    for issuer in config.auth.jwt_issuers:
        if issuer.issuer == name:
            return issuer
    known = [issuer.issuer for issuer in config.auth.jwt_issuers]
    raise ToolkeeperError(f"no [[auth.jwt.issuers]] has issuer {name!r}",
                          code="token.unknown_issuer", data={"issuer": name, "issuers": known})


def _audience(config: GatewayConfig, issuer: JwtIssuerSettings) -> str:
    server = config.server
    return (issuer.audience or config.auth.resource
            or default_resource(server.host, server.port, server.path))


@click.group("token", cls=ToolkeeperGroup)
def token_group() -> None:
    """Development tokens for the gateway's JWT issuers (never for production)."""


@token_group.command("mint")
@click.option("--config", "config_path", required=True, metavar="FILE",
              help="The gateway's TOML configuration (the file serve --config reads).")
@click.option("--issuer", required=True, metavar="ISS",
              help="The issuer (its [[auth.jwt.issuers]] issuer value).")
@click.option("--tenant", required=True, help="The tenant the token speaks for.")
@click.option("--scope", "scopes", multiple=True, help="A scope it holds (repeatable).")
@click.option("--clearance", default="public", show_default=True,
              help="public, internal, confidential or restricted.")
@click.option("--subject", default="dev", show_default=True, help="The sub claim.")
@click.option("--lifetime", type=click.IntRange(min=1), default=DEFAULT_LIFETIME_S,
              show_default=True, metavar="SECONDS",
              help="exp - iat; at most the issuer's max_token_lifetime_s.")
@click.option("--audience", default=None, metavar="AUD",
              help="The aud claim (default: the issuer's audience, else auth.resource, else "
                   "the listen address's URL).")
@click.option("--kid", default=None, help="The kid header (default: the JWKS file's key's).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def mint_cmd(config_path: str, issuer: str, tenant: str, scopes: tuple[str, ...],
             clearance: str, subject: str, lifetime: int, audience: str | None,
             kid: str | None, as_json: bool) -> None:
    """Mint a development token signed with ISS's local key (its private_key_file, or an
    HS256 secret_file). Refused for an issuer without one.

    Exit 0 minted, 1 refused, 2 bad input.
    """
    try:
        config = load_config(config_path, read=read_source)
        settings = _issuer(config, issuer)
        minted = mint_dev_token(settings, audience=audience or _audience(config, settings),
                                tenant=tenant, scopes=scopes, clearance=clearance,
                                subject=subject, lifetime_s=lifetime,
                                max_lifetime_s=config.auth.jwt_max_token_lifetime_s,
                                now=int(time.time()), kid=kid)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json,
             code=EXIT_REFUSED if exc.code in _REFUSALS else EXIT_BAD_INPUT)
    expires = _dt.datetime.fromtimestamp(minted.claims["exp"], _dt.UTC)
    click.echo(f"development token: not for production; issuer {issuer}, tenant {tenant}, "
               f"expires {expires.isoformat().replace('+00:00', 'Z')}", err=True)
    if as_json:
        echo_json({"token": minted.token, "header": minted.header, "claims": minted.claims,
                   "development": True})
    else:
        click.echo(minted.token)


def register(group: click.Group) -> None:
    """Add the ``token`` group to ``group``."""
    group.add_command(token_group)
