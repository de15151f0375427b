"""The gateway as its own release controller (docs/rollouts.md): ``toolkeeper serve`` evaluates
the running rollouts of its registry itself, every ``release.evaluate_every_s`` seconds, one
replica at a time.

At each look a thread reads the rollouts that route (:meth:`RolloutBook.routing`: cached per
registry generation, no store read while it stands) and, when one is running and its step's
interval is up (:func:`~toolkeeper.gate.canary.due`), takes the registry's evaluation lock
without waiting (:meth:`RolloutBook.evaluation_lock`: on PostgreSQL a session advisory lock, so
of the replicas on one database one evaluates at a time; not taken: another replica evaluates,
and this one looks again at its next look). Under the lock it reads each due rollout again
(another replica may have moved it since its routing was cached) and evaluates it
(:func:`~toolkeeper.gate.canary.evaluate_and_store`) from the registry's durable call log,
signing with the ``[gate]`` key, as the actor ``gateway:HOST:PORT`` (``gateway:HOST:stdio``).

The window a look judges ends one call-log flush interval (``calllog.flush_interval_ms``)
before now, and this gateway's own pending calls are written first: every replica writes its
calls within a flush interval, so the window holds every replica's calls up to its end, and the
calls of that last interval fall in the next step's window, which starts where this one ended.

Each decision is one INFO line: ``toolkeeper release: TOOL step N (S%): OUTCOME -> STATE``. A
rollout another replica moved first (``release.conflict``) is that replica's decision: DEBUG
only. Any other failure is one WARNING line with its code (no traceback, no message: nothing a
store error or a key might carry), said again only when the code changes, and the evaluation is
tried again at the next look; the thread never dies of one.

Not evaluated here, and one start-up line says why: no signing key configured (``[gate]``, else
``TOOLKEEPER_GATE_KEY_ID`` and ``TOOLKEEPER_GATE_KEY_FILE``), ``release.evaluate_every_s`` 0, a
``memory:`` registry or ``calllog.durable`` off (this gateway's calls would not reach the log
the evaluation reads). A key that is configured but unusable refuses the start
(``gate.key_invalid``, exit 2).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from toolkeeper.config import GatewayConfig
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.attestation import Signer
from toolkeeper.gate.canary import Evaluation, ResourcePeaks, due, evaluate_and_store
from toolkeeper.gate.keys import signing_key_from, trusted_keys_from
from toolkeeper.gate.rollback import TrustedKey
from toolkeeper.observability.recorder import CallRecorder
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import open_call_rows
from toolkeeper.registry.memory import MemoryStore
from toolkeeper.registry.rollout_book import RolloutBook, rollout_book

__all__ = ["EvaluatorKeys", "RolloutEvaluator", "evaluator_actor", "evaluator_keys",
           "start_evaluator"]

_log = logging.getLogger("toolkeeper.release")


def process_readings() -> dict[str, int]:
    """This process's resident memory and open descriptors, where the system tells them
    (Linux's ``/proc``); empty elsewhere, and the policy's resource rules are then
    inconclusive for a rollout this gateway evaluates."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        return {"rssBytes": resident, "openFds": len(os.listdir("/proc/self/fd"))}
    except (OSError, ValueError, IndexError):
        return {}
_NOT_HERE = "rollouts are not evaluated here: "


@dataclass(frozen=True, slots=True)
class EvaluatorKeys:
    """The key each decision is signed with and the keys trusted (the signer's among them)."""

    signer: Signer
    trusted: Mapping[str, TrustedKey]


def evaluator_keys(config: GatewayConfig) -> EvaluatorKeys | None:
    """The ``[gate]`` keys (else the environment's); None when no signing key is named. A key
    named but unusable is ``gate.key_invalid`` (the start is refused)."""
    signer = signing_key_from(config.gate, os.environ)
    if signer is None:
        return None
    trusted = trusted_keys_from(config.gate, os.environ)
    trusted.setdefault(signer.key_id, signer.trusted())
    return EvaluatorKeys(signer, trusted)


def evaluator_actor(port: int | None) -> str:
    """Who the rollout records as having moved it: this host and the port it listens on
    (``stdio`` for a stdio server)."""
    return f"gateway:{socket.gethostname()}:{'stdio' if port is None else port}"


def _why_not(config: GatewayConfig, registry: Registry, keys: EvaluatorKeys | None
             ) -> str | None:
    if config.release.evaluate_every_s == 0:
        return "release.evaluate_every_s is 0"
    if keys is None:
        return ("no signing key is configured (gate.signing_key_id and gate.signing_key_file, "
                "or TOOLKEEPER_GATE_KEY_ID and TOOLKEEPER_GATE_KEY_FILE); each decision is "
                "signed, so another replica or `toolkeeper release watch` evaluates them")
    if isinstance(registry.store, MemoryStore):
        return "a memory: registry keeps no durable call log to judge the windows from"
    if not config.calllog.durable:
        return "calllog.durable is off: this gateway's calls do not reach the call log"
    return None


class RolloutEvaluator:
    """The evaluator thread: :meth:`start`, then :meth:`stop` (before the registry closes).
    :meth:`look` is one look, as the thread takes it."""

    def __init__(self, registry: Registry, url: str | None, keys: EvaluatorKeys, *,
                 every_s: float, lag_ms: int, actor: str,
                 flush: Callable[[], None] | None = None, log: logging.Logger = _log) -> None:
        self._registry = registry
        self._url = url
        self._keys = keys
        self._every_s = every_s
        self._lag_us = lag_ms * 1000
        self._actor = actor
        self._flush = flush
        self._log = log
        self._said: dict[str, str] = {}
        self._readings = ResourcePeaks()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="toolkeeper-rollouts",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread after the evaluation it is in, if any (idempotent)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        while not self._stopping.wait(self._every_s):
            self.look()

    def _read(self) -> None:
        """This process's resource readings now, kept for :meth:`peaks`."""
        self._readings.add(time.time_ns() // 1000, process_readings())

    def peaks(self, since_us: int) -> dict[str, int] | None:
        """The highest of this process's readings since ``since_us`` (None: none taken)."""
        return self._readings.since(since_us)

    def _window_end_us(self) -> int:
        return time.time_ns() // 1000 - self._lag_us

    def look(self) -> list[Evaluation]:
        """Evaluate every running rollout whose interval is up, if this replica holds the
        evaluation lock; the evaluations stored here."""
        self._read()
        try:
            self._registry.generation_since(0)  # other processes' changes, SQLite's too
            book = rollout_book(self._registry)
            end_us = self._window_end_us()
            tools = sorted(tool for tool, rollout in book.routing().items()
                           if due(rollout, end_us))
            if not tools:
                return []
            with book.evaluation_lock() as taken:
                if not taken:
                    self._log.debug("toolkeeper release: %s due: evaluated by another replica "
                                    "(the evaluation lock is held)", ", ".join(tools))
                    return []
                if self._flush is not None:
                    self._flush()  # what this gateway answered, written before it is judged
                done = [self._evaluate(book, tool) for tool in tools]
        except Exception as exc:  # never let the thread die: the next look tries again
            self._failed("rollouts", exc)
            return []
        self._said.pop("rollouts", None)
        return [evaluation for evaluation in done if evaluation is not None]

    def _evaluate(self, book: RolloutBook, tool: str) -> Evaluation | None:
        try:
            end_us = self._window_end_us()
            current = book.get(tool)  # as it is now: another replica may have moved it
            if current is None or not due(current, end_us):
                return None
            rows = open_call_rows(self._url, read_only=True)
            try:
                evaluation = evaluate_and_store(self._registry, rows, tool, end_us,
                                                self._keys.signer, self._keys.trusted,
                                                actor=self._actor, resources=self.peaks)
            finally:
                rows.close()
        except ToolkeeperError as exc:
            if exc.code == "release.conflict":
                self._log.debug("toolkeeper release: %s: moved by another replica first "
                                "(release.conflict)", tool)
                return None
            self._failed(tool, exc)
            return None
        except Exception as exc:
            self._failed(tool, exc)
            return None
        if evaluation is None:
            return None
        self._said.pop(tool, None)
        record = evaluation.record
        self._log.info("toolkeeper release: %s step %d (%s%%): %s -> %s", tool,
                       record.step + 1, record.share, record.outcome, record.state_after)
        return evaluation

    def _failed(self, what: str, exc: Exception) -> None:
        code = exc.code if isinstance(exc, ToolkeeperError) else type(exc).__name__
        level = logging.DEBUG if self._said.get(what) == code else logging.WARNING
        self._said[what] = code
        self._log.log(level, "toolkeeper release: %s: not evaluated (%s); tried again at the "
                      "next look", what, code)


def start_evaluator(config: GatewayConfig, registry: Registry, keys: EvaluatorKeys | None, *,
                    port: int | None, call_log: object,
                    log: logging.Logger) -> RolloutEvaluator | None:
    """The started evaluator of ``config`` (``port``: the one listened on, None on stdio;
    ``call_log``: the gateway's, flushed before each evaluation when it is the durable
    recorder), or None after one line saying why there is none."""
    why = _why_not(config, registry, keys)
    if why is not None or keys is None:
        log.info("%s%s", _NOT_HERE, why)
        return None
    actor = evaluator_actor(port)
    evaluator = RolloutEvaluator(registry, config.registry.url or None, keys,
                                 every_s=config.release.evaluate_every_s,
                                 lag_ms=config.calllog.flush_interval_ms, actor=actor,
                                 flush=call_log.flush if isinstance(call_log, CallRecorder)
                                 else None)
    evaluator.start()
    log.info("rollouts evaluated here every %g s as %s", config.release.evaluate_every_s,
             actor)
    return evaluator
