"""Issue 15 acceptance 1 and 2 against real gateway processes on 127.0.0.1.

* Seed 000 (SPEC 4): ``payments.lookup`` through ``toolkeeper serve --demo`` with the scripted
  model: three sorted errors, repair drops ``urgent``, the model is given exactly the two
  remaining errors in one turn, the corrected call runs and the call log holds it once.
* Seed 003: a kernel lists ``db.query`` 3.0.0 and stays connected while the operator publishes
  4.0.0 and retires 3.0.0 with the CLI; its next call is refused, it re-lists once,
  re-validates and reports the incompatibility with the classifier's rule ids; the handlers'
  own record proves no handler ran with 3.0.0 arguments after the retirement.
* The other branch of seed 003: ``payments.lookup`` moves to a 2.0.0 the call's arguments still
  fit; the refused call is re-listed once, re-validated and runs under 2.0.0 (the call log
  holds exactly that one execution).
"""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from pathlib import Path
from typing import Any

from kernel_live_kit import BOUNDS, call_log, gateway, toolkeeper_cli

from toolkeeper.client import Target, connect
from toolkeeper.client.kernel import Kernel, is_relist_refusal
from toolkeeper.client.kernel_outcome import CallOutcome
from toolkeeper.client.model import ScriptedModel
from toolkeeper.contracts.validate import validate

SEED_ARGS = {"reference": "PMT771", "include_legs": "yes", "urgent": True}
CORRECTED = {"reference": "PMT-771", "include_legs": True}
HANDLERS = str(Path(__file__).resolve().parent / "kernel_seed_handlers.py") + ":handlers"


def _demo_file(name: str, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    target = into / name
    target.write_bytes(resources.files("toolkeeper.demo").joinpath(name).read_bytes())
    return target


def test_seed_trace_end_to_end_against_the_demo_gateway(tmp_path: Path) -> None:
    registry = tmp_path / "registry.db"
    model = ScriptedModel([CORRECTED])

    async def run(url: str) -> tuple[CallOutcome, list[Any]]:
        async with await connect(Target.from_url(url), timeouts=BOUNDS) as session:
            kernel = Kernel(session, model=model)
            tools = await kernel.tools()
            schema = next(t for t in tools if t.name == "payments.lookup").input_schema
            assert schema is not None
            return await kernel.call("payments.lookup", SEED_ARGS), validate(schema, SEED_ARGS)

    with gateway(registry, "--demo") as url:
        outcome, before_repair = asyncio.run(run(url))
        rows = call_log(registry, "payments.lookup", at_least=1)
    assert [(e.path, e.keyword) for e in before_repair] == [
        ("$.include_legs", "type"), ("$.reference", "pattern"),
        ("$.urgent", "additionalProperties")]
    assert [(r.path, r.rule) for r in outcome.repairs] == [("$.urgent", "drop.additional_property")]
    assert len(model.turns) == 1
    assert [(e.path, e.keyword) for e in model.turns[0].errors] == [
        ("$.include_legs", "type"), ("$.reference", "pattern")]
    assert outcome.ok and outcome.arguments == CORRECTED and outcome.schema_version == "1.0.0"
    assert outcome.result is not None
    assert outcome.result["structuredContent"]["reference"] == "PMT-771"
    assert "legs" in outcome.result["structuredContent"]
    assert [(r["tool"], r["version"], r["outcome"]) for r in rows] == [
        ("payments.lookup", "1.0.0", "ok")]


def _handled(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_seed_003_the_contract_moves_under_a_connected_kernel(tmp_path: Path) -> None:
    registry, estate, log = tmp_path / "registry.db", tmp_path / "estate", tmp_path / "ran.jsonl"
    _demo_file("db.query-3.0.0.json", estate)
    v4 = _demo_file("db.query-4.0.0.json", tmp_path / "later")
    db = f"sqlite:///{registry}"
    lists: list[int] = []

    async def run(url: str) -> tuple[CallOutcome, CallOutcome, int]:
        async with await connect(Target.from_url(url), timeouts=BOUNDS) as session:
            kernel = Kernel(session)
            listed = {t.name: t.version for t in await kernel.tools()}
            assert listed == {"db.query": "3.0.0"}
            first = await kernel.call("db.query", {"sql": "select 1"})
            lists.append(kernel.cache.generation)
            for step in (("publish", str(v4), "--actor", "ops"),
                         ("retire", "db.query", "3.0.0", "--actor", "ops")):
                done = await asyncio.to_thread(toolkeeper_cli, *step, "--registry", db)
                assert done.returncode == 0, done.stderr.decode()
            handled_at_retirement = len(_handled(log))
            moved = await kernel.call("db.query", {"sql": "select 2", "timeout_ms": 500})
            lists.append(kernel.cache.generation)
            return first, moved, handled_at_retirement

    with gateway(registry, "--estate", str(estate), "--handlers", HANDLERS,
                 env={"KERNEL_HANDLER_LOG": str(log)}) as url:
        first, moved, handled_at_retirement = asyncio.run(run(url))
    assert first.ok and first.schema_version == "3.0.0"
    assert lists == [1, 2]  # one listing before, exactly one re-list for the moved call
    assert moved.relisted and is_relist_refusal(moved.error) and not moved.ok
    assert moved.error is not None
    assert moved.error["data"]["requestedVersion"] == "3.0.0"
    assert moved.incompatible is not None
    rendered = moved.to_dict()["incompatible"]
    assert (rendered["from"], rendered["to"]) == ("3.0.0", "4.0.0")
    assert {(c["rule"], c["path"], c["bump"]) for c in rendered["changes"]} >= {
        ("input.property.removed", "$.properties.timeout_ms", "major"),
        ("input.required.added", "$.required[1]", "major"),
        ("input.enum.narrowed", "$.properties.mode.enum", "major")}
    assert [(e.path, e.keyword) for e in moved.errors] == [
        ("$.timeout", "required"), ("$.timeout_ms", "additionalProperties")]
    handled = _handled(log)
    assert [h["version"] for h in handled[:handled_at_retirement]] == ["3.0.0"]
    assert handled[handled_at_retirement:] == []  # nothing ran after the retirement


def test_a_compatible_move_is_followed_with_one_relist_and_runs_under_the_new_version(
        tmp_path: Path) -> None:
    registry = tmp_path / "registry.db"
    contract = json.loads(_demo_file("payments.lookup-1.0.0.json", tmp_path / "v1").read_text())
    contract["version"] = "2.0.0"
    del contract["inputSchema"]["properties"]["include_legs"]
    v2 = tmp_path / "payments.lookup-2.0.0.json"
    v2.write_text(json.dumps(contract))
    db = f"sqlite:///{registry}"

    async def run(url: str) -> tuple[CallOutcome, int]:
        async with await connect(Target.from_url(url), timeouts=BOUNDS) as session:
            kernel = Kernel(session)
            await kernel.tools()
            for step in (("publish", str(v2)), ("retire", "payments.lookup", "1.0.0")):
                done = await asyncio.to_thread(toolkeeper_cli, *step, "--registry", db)
                assert done.returncode == 0, done.stderr.decode()
            outcome = await kernel.call("payments.lookup", {"reference": "PMT-772"})
            return outcome, kernel.cache.generation

    with gateway(registry, "--demo") as url:
        outcome, listings = asyncio.run(run(url))
        rows = call_log(registry, "payments.lookup", at_least=1)
    assert outcome.ok and outcome.relisted and outcome.incompatible is None
    assert outcome.schema_version == "2.0.0" and listings == 2
    assert outcome.result is not None and outcome.result["_meta"]["schemaVersion"] == "2.0.0"
    assert [(r["version"], r["outcome"]) for r in rows] == [("2.0.0", "ok")]
