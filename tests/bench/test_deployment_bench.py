"""Smoke test of ``bench/deployment.py``: every configuration the deployment benches measure
(anonymous, ``serve --demo``, an API key or a JWT with limits, metrics and the durable call
log) is built from its configuration file and answers the measured call through its ASGI app
in both eras, with the features it names in force."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("name", ["anonymous", "demo", "deploy", "deploy-jwt"])
def test_each_configuration_answers_the_call_in_both_eras(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.delitem(sys.modules, "deployment", raising=False)
    import deployment

    built = deployment.assemble(name, tmp_path)
    try:
        assert getattr(built.app, "kernel", None) is built.gateway.kernel
        assert (built.features.limits is not None) is name.startswith("deploy")
        assert (built.features.observability.metrics is not None) is name.startswith("deploy")
        assert (built.token is not None) is name.startswith("deploy")
        exchange = deployment.exchanger(built.app)

        async def calls() -> list[int]:
            statuses = []
            for era in deployment.ERAS:
                session = (await deployment.legacy_session_asgi(built.app, built.token)
                           if era == "legacy" else None)
                body = deployment.call_body(era)
                status, _, reply = await exchange(
                    deployment.scope_of(deployment.call_headers(era, built.token, session),
                                        body), body)
                deployment.check_reply(reply)
                statuses.append(status)
            if built.token is not None:  # the credential is required: without it, a 401
                body = deployment.call_body("modern")
                status, _, reply = await exchange(
                    deployment.scope_of(deployment.call_headers("modern", None), body), body)
                assert status == 401 and json.loads(reply)["error"] == "invalid_token"
            return statuses

        assert asyncio.run(calls()) == [200, 200]
    finally:
        built.stop()


def test_the_sdk_baseline_loop_answers_the_same_call_through_the_sdk_app() -> None:
    run = subprocess.run([sys.executable, str(BENCH / "callgrind.py"), "--child", "asgi-sdk",
                          "3"], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
