"""Property (issue 15 acceptance 5): whatever the caller and the model give it, the kernel never
sends arguments the listed contract refuses, repair on or off, through a re-list too."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernel_session_kit import FakeSession, demo_descriptor

from toolkeeper.client.kernel import Kernel
from toolkeeper.client.model import ScriptedModel
from toolkeeper.contracts.validate import validate

TOOLS = {
    "payments.lookup": demo_descriptor("payments.lookup-1.0.0.json"),
    "db.query": demo_descriptor("db.query-3.0.0.json"),
    "tickets.create": demo_descriptor("tickets.create-1.0.0.json"),
}
DB_V4 = demo_descriptor("db.query-4.0.0.json")
KEYS = ["reference", "include_legs", "urgent", "sql", "timeout_ms", "timeout", "mode", "title",
        "priority", "body"]

_scalar = (st.none() | st.booleans() | st.integers(-3, 40000) | st.floats(allow_nan=False,
           allow_infinity=False, width=32)
           | st.sampled_from(["PMT-771", "PMT771", "yes", "true", "42", "read", "write", "",
                              "select 1", "urgent", "low", "normal"]))
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=2)
                      | st.dictionaries(st.sampled_from(KEYS), inner, max_size=2), max_leaves=4)
_arguments = st.dictionaries(st.sampled_from(KEYS), _value, max_size=5) | _value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(TOOLS)), arguments=_arguments, answer=_arguments,
       use_repair=st.booleans(), move=st.booleans())
def test_the_kernel_never_sends_arguments_the_listed_contract_refuses(
        name: str, arguments: Any, answer: Any, use_repair: bool, move: bool) -> None:
    session = FakeSession()
    for tool in TOOLS.values():
        session.publish(tool)
    kernel = Kernel(session, model=ScriptedModel([answer]), repair=use_repair)
    asyncio.run(kernel.tools())
    if move:
        session.publish(DB_V4, retire_previous=True)
    outcome = asyncio.run(kernel.call(name, arguments))
    listed = {**TOOLS, "db.query": DB_V4} if move else TOOLS
    for sent in session.sent:
        pinned = (sent.meta or {}).get("schemaVersion")
        schema = (TOOLS[name] if pinned == TOOLS[name]["_meta"]["schemaVersion"]
                  else listed[name])["inputSchema"]
        assert validate(schema, sent.arguments) == [], (sent, outcome)
    if outcome.errors and not outcome.relisted:
        assert session.sent == []
