"""The gateway's liveness and readiness, as the probes answer them (``docs/operations.md``).

=============  ======  ============================================================
probe          status  body (canonical JSON)
=============  ======  ============================================================
``/healthz``   200     ``{"status":"ok"}`` whenever the process answers at all
``/readyz``    200     ``{"status":"ok"}``: the estate is loaded and the registry reached
``/readyz``    503     ``{"reason":"estate_loading","status":"unavailable"}`` until the
                       start has published everything it publishes
``/readyz``    503     ``{"reason":"registry_unreachable","status":"unavailable"}`` when a
                       fresh connection to the registry cannot read it
=============  ======  ============================================================

Each readiness answer asks the registry afresh (:meth:`Registry.ping`: a new connection that
reads the schema table); concurrent probes share one check at a time. A change between ready
and not ready is logged once each way, with the store's error code, never its URL's password.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Final

from toolkeeper.errors import StoreError
from toolkeeper.registry import Registry
from toolkeeper.transports.probes import LIVE_PATH, READY_PATH

__all__ = ["ESTATE_LOADING", "LIVE_PATH", "READY_PATH", "REGISTRY_UNREACHABLE", "Health"]

ESTATE_LOADING: Final = "estate_loading"
"""``/readyz`` reason: the start has not finished publishing the estate."""
REGISTRY_UNREACHABLE: Final = "registry_unreachable"
"""``/readyz`` reason: the registry could not be read over a fresh connection."""

_log = logging.getLogger("toolkeeper.health")


def _body(status: str, reason: str | None = None) -> bytes:
    fields = {"status": status} if reason is None else {"reason": reason, "status": status}
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


_OK: Final = (200, _body("ok"))


class Health:
    """Answers ``live`` and ``ready`` for one gateway over ``registry``; :meth:`estate_loaded`
    is called once the start has published its estate."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._loaded = False
        self._lock = threading.Lock()
        self._last_reason: str | None = None

    def estate_loaded(self) -> None:
        self._loaded = True

    def live(self) -> tuple[int, bytes]:
        return _OK

    def answer(self, path: str) -> tuple[int, bytes] | None:
        """The probe at ``path`` (blocking), None for a path that is not a probe."""
        if path == LIVE_PATH:
            return self.live()
        if path == READY_PATH:
            return self.ready()
        return None

    def ready(self) -> tuple[int, bytes]:
        if not self._loaded:
            return 503, _body("unavailable", ESTATE_LOADING)
        with self._lock:
            try:
                self._registry.ping()
            except StoreError as exc:
                if self._last_reason is None:
                    _log.warning("not ready: the registry is unreachable (%s)", exc.code)
                self._last_reason = REGISTRY_UNREACHABLE
                return 503, _body("unavailable", REGISTRY_UNREACHABLE)
            if self._last_reason is not None:
                _log.info("ready again: the registry is reachable")
            self._last_reason = None
        return _OK
