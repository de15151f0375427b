"""The client's bounds in time and bytes, with documented defaults."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClientTimeouts"]


@dataclass(frozen=True)
class ClientTimeouts:
    """Every wait the client makes is bounded by one of these (seconds, bytes).

    * ``probe_s`` (10 s, the official SDK's discover timeout) and ``probe_max_bytes`` (1 MiB):
      the modern ``server/discover`` probe and the legacy ``initialize`` probe of era
      selection (SPEC 5.1), each;
    * ``request_s`` (60 s) and ``max_response_bytes`` (16 MiB): every other request, until its
      response has arrived (notifications before it included);
    * ``connect_s`` (10 s): opening a TCP connection;
    * ``close_s`` (5 s): ending a session, and waiting for a stdio server to exit before it is
      terminated, then killed, by its pid.
    """

    probe_s: float = 10.0
    probe_max_bytes: int = 1 << 20
    request_s: float = 60.0
    max_response_bytes: int = 16 << 20
    connect_s: float = 10.0
    close_s: float = 5.0
