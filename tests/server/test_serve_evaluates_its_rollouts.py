"""``toolkeeper serve`` (a real process on a SQLite registry, API-key principals, its durable
call log) evaluating its own rollout, whose interval is one second: under the load the test
sends, it promotes a healthy candidate into force and rolls a failing one back, each decision
one log line, stored signed with the rollout as the gateway's; a gateway without a signing key
says at start that it does not evaluate, and leaves the rollout alone; and ``[release]``
is configured like any section."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from rollout_serve_kit import (
    DECIDED,
    KEY,
    call,
    gateway_config,
    prepared,
    served,
    start_rollout,
)

from process_kit import SRC, keep_draining, read_until, serving_gateway_logged, stop_process
from toolkeeper.cli.main import cli
from toolkeeper.cli.sources import read_source
from toolkeeper.config import load_config
from toolkeeper.errors import ConfigError
from toolkeeper.gate.attestation import verify_envelope
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollout_rows import thawed

PRINCIPALS = 30
CALLS_EACH = 4
NOT_HERE = re.compile(rb"rollouts are not evaluated here: ([^\n]*)\n.*?"
                      rb"toolkeeper gateway on (\S+/mcp)\n", re.DOTALL)
"""The start-up line, then the announcement."""


def _status(url: str) -> dict[str, Any]:
    done = CliRunner().invoke(cli, ["release", "status", "pay", "--registry", url, "--json"])
    assert done.exit_code == 0, done.output
    status: dict[str, Any] = json.loads(done.stdout)
    return status


def _load(http: httpx.Client, url: str, tokens: dict[str, str]) -> None:
    for i, key_id in enumerate(sorted(tokens)):
        for j in range(CALLS_EACH):
            call(http, url, tokens[key_id], i * CALLS_EACH + j)


@pytest.mark.parametrize(("failing", "decided", "in_force"), [
    (False, "promote -> promoted", "2.0.0"),
    (True, "rollback -> rolled_back", "1.0.0")])
def test_the_gateway_decides_its_rollout_when_the_interval_is_up(
        tmp_path: Path, failing: bool, decided: str, in_force: str) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    tokens = prepared(url, PRINCIPALS)
    start_rollout(url, steps=(50, 100), interval_s=1, max_holds=1000)  # holds until load
    config = gateway_config(tmp_path, url, failing=failing)
    with serving_gateway_logged(["--config", str(config)]) as (gateway, log), \
            httpx.Client(timeout=30) as http:
        _load(http, gateway, tokens)
        line = log.lines[log.wait(f"{DECIDED}1 (50%): {decided}", timeout=60)]
        assert {served(call(http, gateway, token, 1)) for token in tokens.values()} == {
            in_force}
    decisions = [entry for entry in log.lines if DECIDED in entry]
    assert [d for d in decisions if "hold ->" not in d] == [line]  # holds: before the load
    status = _status(url)
    assert status["rollout"]["state"] == decided.rsplit(" ", 1)[1]
    assert status["rollout"]["actor"].startswith("gateway:")
    assert status["lastDecision"]["outcome"] == decided.split(" ", 1)[0]
    with Registry.open(url) as registry:
        book = rollout_book(registry)
        rollout = book.get("pay")
        assert rollout is not None
        stored = book.decisions(rollout)  # (a hold may come before the announcement)
        assert [d.outcome for d in stored if d.outcome != "hold"] == [decided.split(" ", 1)[0]]
        statement, refusals = verify_envelope(thawed(stored[-1].envelope),
                                              {KEY.key_id: KEY.trusted()})
        assert refusals == [] and statement["predicate"]["outcome"] == stored[-1].outcome
        assert registry.get("pay", "2.0.0").status.value == (
            "deprecated" if failing else "active")


def _without_key(config: Path) -> None:
    config.write_text("\n".join(line for line in config.read_text().splitlines()
                                if not line.startswith("signing_key_")))


@pytest.mark.parametrize(("change", "why"), [
    ("no signing key", "no signing key is configured"),
    ("evaluate_every_s 0", "release.evaluate_every_s is 0")])
def test_a_gateway_that_does_not_evaluate_says_why_and_leaves_rollouts_alone(
        tmp_path: Path, change: str, why: str) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    tokens = prepared(url, 4)
    start_rollout(url, steps=(50, 100), interval_s=1, max_holds=1)
    config = gateway_config(tmp_path, url, failing=False,
                            evaluate_every_s=0 if change == "evaluate_every_s 0" else 0.2)
    if change == "no signing key":
        _without_key(config)
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", "--config",
                             str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": SRC})
    try:
        said, gateway = (part.decode() for part in read_until(proc.stderr, NOT_HERE, 60).groups())
        log = keep_draining(proc.stderr)
        with httpx.Client(timeout=30) as http:
            for n, token in enumerate(tokens.values()):
                served(call(http, gateway, token, n))
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    finally:
        stop_process(proc)
    assert why in said
    assert not [line for line in log.lines if DECIDED in line]
    status = _status(url)
    assert (status["rollout"]["state"], status["decisions"]) == ("running", 0)


def test_release_evaluate_every_s_is_a_configuration_key(tmp_path: Path) -> None:
    assert load_config(None, read=read_source).release.evaluate_every_s == 5.0
    good = tmp_path / "good.toml"
    good.write_text("[release]\nevaluate_every_s = 0.5\n")
    assert load_config(str(good), read=read_source).release.evaluate_every_s == 0.5
    bad = tmp_path / "bad.toml"
    bad.write_text("[release]\nevaluate_every_s = -1\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(bad), read=read_source)
    assert (info.value.code, info.value.data["key"]) == ("config.out_of_range",
                                                         "release.evaluate_every_s")
