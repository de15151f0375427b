"""The credential an upstream receives, and the HTTP target that sends it.

An upstream's credential is its own: the content of its ``token_file`` (stripped) as
``Authorization: Bearer``, or the ``Name: value`` lines of its ``header_file``, read when a
session is opened (so a rotated file is picked up at the next connect). A file that cannot be
read, or a value that cannot go in a header, is :class:`~toolkeeper.errors.ConfigError`
``upstream.credential_unreadable`` / ``upstream.credential_invalid`` naming the upstream and
the key, never quoting the value. The caller's credential is never among them.

A stdio upstream gets none of the gateway's own environment (where its registry URL, its keys
and the credentials of other upstreams may live) beyond :data:`STDIO_INHERITED_ENV`, the
variables a process needs to start (as the official SDKs' stdio clients do):
:func:`stdio_environment`. What it writes to its standard error goes to the gateway's log, one
record per line at info on ``toolkeeper.upstreams.stderr``, redacted (:func:`log_stderr`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkeeper.client import ClientTimeouts, Target, Transport
from toolkeeper.client.transport import ServerRequestHandler
from toolkeeper.contracts.redaction import redact_text
from toolkeeper.errors import ClientConnectionError, ConfigError
from toolkeeper.upstreams.hop import open_hop
from toolkeeper.upstreams.model import UpstreamDefinition

__all__ = ["STDIO_INHERITED_ENV", "HeadedTarget", "HeadedTransport", "log_stderr",
           "stdio_environment", "upstream_headers"]

_stderr_log = logging.getLogger("toolkeeper.upstreams.stderr")

STDIO_INHERITED_ENV = ("HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR",
                       "TZ", "USER")
"""The gateway's environment variables a stdio upstream inherits; no other one reaches it."""


def stdio_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a stdio upstream is started with: :data:`STDIO_INHERITED_ENV` of
    ``environ`` (the gateway's, by default), those it has."""
    source = os.environ if environ is None else environ
    return {key: source[key] for key in STDIO_INHERITED_ENV if key in source}


def log_stderr(upstream: str, line: str) -> None:
    """One line of a stdio upstream's standard error, in the gateway's log (redacted: a URL's
    password, a bearer token or a key the line quotes never reaches the log)."""
    _stderr_log.info("upstream %s stderr: %s", upstream, redact_text(line))

_HEADER_NAME = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _visible(value: str) -> bool:
    return bool(value) and all("\x20" <= c <= "\x7e" for c in value)


def _read(defn: UpstreamDefinition, key: str, path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"upstream {defn.name!r}: {key} cannot be read "
                          f"({type(exc).__name__})", code="upstream.credential_unreadable",
                          data={"key": key, "upstream": defn.name}) from None


def _invalid(defn: UpstreamDefinition, key: str, what: str) -> ConfigError:
    return ConfigError(f"upstream {defn.name!r}: {key} {what}",
                       code="upstream.credential_invalid",
                       data={"key": key, "upstream": defn.name})


def upstream_headers(defn: UpstreamDefinition) -> dict[str, str]:
    """The headers that carry ``defn``'s own credential (empty when it has none)."""
    if defn.token_file is not None:
        token = _read(defn, "token_file", defn.token_file).strip()
        if not token or " " in token or not _visible(token):
            raise _invalid(defn, "token_file", "does not hold one token of visible ASCII")
        return {"Authorization": f"Bearer {token}"}
    if defn.header_file is not None:
        headers: dict[str, str] = {}
        for number, line in enumerate(_read(defn, "header_file", defn.header_file)
                                      .splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, sep, value = line.partition(":")
            name, value = name.strip(), value.strip()
            if not sep or not name or not set(name) <= _HEADER_NAME or not _visible(value):
                raise _invalid(defn, "header_file", f"line {number} is not 'Name: value'")
            headers[name] = value
        return headers
    return {}


class HeadedTransport:
    """A transport that adds ``headers`` to every request it sends (the request's own
    headers, the protocol's, win on a clash)."""

    def __init__(self, inner: Transport, headers: Mapping[str, str]) -> None:
        self._inner = inner
        self._headers = dict(headers)
        self._own = {name.lower() for name in headers}

    def _with(self, headers: Mapping[str, str]) -> dict[str, str]:
        out = dict(self._headers)
        for name, value in headers.items():
            if name.lower() in self._own:
                out = {k: v for k, v in out.items() if k.lower() != name.lower()}
            out[name] = value
        return out

    async def exchange(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                       timeout: float, max_bytes: int,
                       on_message: Callable[[Any], None] | None = None,
                       on_request: ServerRequestHandler | None = None) -> Any:
        return await self._inner.exchange(message, self._with(headers), timeout=timeout,
                                          max_bytes=max_bytes, on_message=on_message,
                                          on_request=on_request)

    async def notify(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                     timeout: float) -> int | None:
        return await self._inner.notify(message, self._with(headers), timeout=timeout)

    def stream(self, message: Mapping[str, Any] | None, headers: Mapping[str, str], *,
               max_bytes: int) -> AsyncIterator[Any]:
        return self._inner.stream(message, self._with(headers), max_bytes=max_bytes)

    async def end_session(self, headers: Mapping[str, str], *, timeout: float) -> None:
        await self._inner.end_session(self._with(headers), timeout=timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass(frozen=True)
class HeadedTarget(Target):
    """An upstream's HTTP target: its transport runs on :func:`~toolkeeper.upstreams.hop.
    open_hop` and sends ``headers`` on every request."""

    headers: tuple[tuple[str, str], ...] = ()

    async def open(self, timeouts: ClientTimeouts) -> Transport:
        if self.url is None:  # pragma: no cover - built by target_for with a URL only
            raise ClientConnectionError("no URL to send to")
        inner = open_hop(self.url, timeouts)
        if not self.headers:
            return inner
        return HeadedTransport(inner, dict(self.headers))
