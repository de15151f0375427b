"""The model's one turn (SPEC 4): a prompt byte-identical for identical inputs, in every run and
every process; answers read as JSON; the scripted model's script."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_session_kit import demo_descriptor

from toolkeeper.client.model import ModelTurn, ScriptedModel, read_answer, render_prompt
from toolkeeper.contracts.repair import repair
from toolkeeper.contracts.validate import Issue
from toolkeeper.errors import ClientError

PAYMENTS = demo_descriptor("payments.lookup-1.0.0.json")
SEED = {"reference": "PMT771", "include_legs": "yes", "urgent": True}
HERE = Path(__file__).resolve().parent

# The prompt of the seed's turn (SPEC 4), from another interpreter with its own hash seed.
_CHILD = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from kernel_session_kit import demo_descriptor
from toolkeeper.client.model import render_prompt
from toolkeeper.contracts.repair import repair
tool = demo_descriptor("payments.lookup-1.0.0.json")
fixed = repair({"urgent": True, "include_legs": "yes", "reference": "PMT771"}, tool["inputSchema"])
sys.stdout.write(render_prompt(tool, fixed.arguments, reversed(fixed.errors)))
"""


def _seed_prompt() -> str:
    fixed = repair(SEED, PAYMENTS["inputSchema"])
    return render_prompt(PAYMENTS, fixed.arguments, fixed.errors)


def test_the_seed_prompt_holds_the_contract_the_arguments_and_the_two_sorted_errors() -> None:
    prompt = _seed_prompt()
    _, contract, arguments, errors = prompt.split("\n\n")
    assert json.loads(contract.split("\n", 1)[1]) == PAYMENTS
    assert json.loads(arguments.split("\n", 1)[1]) == {"include_legs": "yes",
                                                       "reference": "PMT771"}
    listed = json.loads(errors.split("\n", 1)[1])
    assert [(e["path"], e["keyword"]) for e in listed] == [
        ("$.include_legs", "type"), ("$.reference", "pattern")]


@pytest.mark.parametrize("hash_seed", ["0", "1", "4242"])
def test_the_prompt_is_byte_identical_in_another_process(hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(HERE)], capture_output=True,
                          timeout=60, check=True, env=env)
    assert hashlib.sha256(done.stdout).hexdigest() == hashlib.sha256(
        _seed_prompt().encode("utf-8")).hexdigest()


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8)
_issue = st.builds(Issue, st.from_regex(r"\$(\.[a-z]{1,3}){0,2}", fullmatch=True),
                   st.text(max_size=12), st.sampled_from(["type", "pattern", "required"]))


@settings(max_examples=200, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=5), _json, max_size=4),
       errors=st.lists(_issue, max_size=5), data=st.data())
def test_identical_inputs_give_identical_prompts_whatever_the_order(
        arguments: dict[str, Any], errors: list[Issue], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(errors))
    reordered = dict(reversed(list(arguments.items())))
    first = render_prompt(PAYMENTS, arguments, errors)
    assert first == render_prompt(dict(reversed(list(PAYMENTS.items()))), reordered, shuffled)
    assert first == ModelTurn(PAYMENTS, arguments, tuple(sorted(errors))).prompt


def test_answers_are_read_as_json_values_text_or_fenced() -> None:
    assert read_answer({"a": 1}) == {"a": 1}
    assert read_answer(' {"a": 2} ') == {"a": 2}
    assert read_answer('```json\n{"a": 3}\n```') == {"a": 3}
    assert read_answer("```\n[1]\n```") == [1]


def test_an_answer_that_is_not_json_has_a_stable_code() -> None:
    with pytest.raises(ClientError) as caught:
        read_answer("sure, here you go: reference PMT-771")
    assert caught.value.code == "client.model_answer"


def test_the_scripted_model_answers_in_order_records_turns_and_runs_out_loudly() -> None:
    turn = ModelTurn(PAYMENTS, {}, ())
    model = ScriptedModel([{"a": 1}, lambda t: {"name": t.name}])
    assert asyncio.run(model.correct(turn)) == {"a": 1}
    assert asyncio.run(model.correct(turn)) == {"name": "payments.lookup"}
    with pytest.raises(ClientError) as caught:
        asyncio.run(model.correct(turn))
    assert caught.value.code == "client.model_exhausted" and len(model.turns) == 3
