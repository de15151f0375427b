"""A serving gateway's :class:`~toolkeeper.upstreams.serving_sync.ServingSync` against a real
upstream (the official SDK's ``MCPServer`` over HTTP, serving ``subscriptions/listen``): the
change stream's opening syncs, an upstream's ``notifications/tools/list_changed`` syncs, and a
burst of them heard while a sync runs costs exactly one more sync; stopping it closes the
stream."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from drift_control import DriftUpstream, drift_upstream, wider

from toolkeeper.registry import MemoryStore, Registry
from toolkeeper.upstreams.connections import open_session
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.report import SyncReport
from toolkeeper.upstreams.serving_sync import ServingSync

WAIT_S = 30.0
"""Backstop of one wait for a sync report (each wait ends on the report it waits for)."""


class Reports:
    """The reports ``on_synced`` hands over, waited for by count."""

    def __init__(self) -> None:
        self.seen: list[SyncReport] = []
        self._changed = threading.Condition()

    def __call__(self, report: SyncReport) -> None:
        with self._changed:
            self.seen.append(report)
            self._changed.notify_all()

    def until(self, count: int) -> list[tuple[str, str | None]]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.seen) >= count, WAIT_S), self.seen
            return [(r.tools[0].action, r.tools[0].version) for r in self.seen]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DriftUpstream]:
    with drift_upstream(tmp_path_factory.mktemp("drift")) as running:
        yield running


def test_list_changed_syncs_and_a_burst_during_a_sync_costs_one_more(
        upstream: DriftUpstream) -> None:
    registry = Registry(MemoryStore())
    ups = Upstreams(registry)
    defn = UpstreamDefinition(name="files", url=upstream.url, prefix="files.")
    ups.add(defn, origin="config", actor="config")
    reports = Reports()
    serving = ServingSync(ups, [defn], actor="sync", open_session=open_session,
                          on_synced=reports)
    serving.start()
    try:
        assert reports.until(1) == [("imported", "1.0.0")]  # the stream's opening
        upstream.serve(wider())
        upstream.control("hold")
        upstream.control("announce", count=1)
        upstream.until(lambda state: state["waiting"] == 1)  # that sync is listing, held
        upstream.control("announce", count=4)
        for _ in range(200):  # heard: the opening, then five notifications
            if serving.heard.get("files") == 6:
                break
            upstream.control("state")
        assert serving.heard == {"files": 6}
        upstream.control("release")
        assert reports.until(3) == [("imported", "1.0.0"), ("published", "1.1.0"),
                                    ("unchanged", "1.1.0")]
        assert upstream.control("state")["lists"] == 3
    finally:
        serving.stop()
        registry.close()
    assert upstream.until(lambda state: state["listeners"] == 0)["waiting"] == 0
    assert len(reports.seen) == 3
