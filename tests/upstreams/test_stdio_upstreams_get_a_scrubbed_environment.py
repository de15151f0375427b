"""A stdio upstream never sees the gateway's environment beyond the variables a process needs
to start: ``@modelcontextprotocol/server-everything``'s ``get-env`` tool (it answers with its
whole environment), started over the session the sync and the forwarding open, shows ``PATH``
and ``HOME`` and none of a registry URL with a password, a sealing key or another upstream's
token set in the gateway's environment."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from peer_upstreams import PEER_UPSTREAMS

from peer_kit import Peers
from toolkeeper.upstreams.connections import open_session
from toolkeeper.upstreams.credentials import STDIO_INHERITED_ENV, stdio_environment
from toolkeeper.upstreams.model import UpstreamDefinition

SECRETS = {"TOOLKEEPER_REGISTRY": "postgresql://tk:pg-s3cret@127.0.0.1:5432/tk",
           "TOOLKEEPER_SEALING_KEYS": "sealing-s3cret", "FILES_UPSTREAM_TOKEN": "tok-s3cret"}


async def _environment(defn: UpstreamDefinition) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with await open_session(defn) as session:
            reply = await session.call_tool("get-env", {})
    text = next(block["text"] for block in reply.result["content"] if block["type"] == "text")
    env: dict[str, Any] = json.loads(text)
    return env


def test_the_everything_servers_environment_holds_none_of_the_gateways_secrets(
        peers: Peers, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    everything = next(kind for kind in PEER_UPSTREAMS if kind.tool == "echo"
                      and kind.label.startswith("@modelcontextprotocol/server-everything"))
    defn = UpstreamDefinition(name="every", command=tuple(everything.command(peers)))
    env = anyio.run(_environment, defn)
    assert not set(SECRETS) & set(env)
    assert not [value for value in env.values() if "s3cret" in str(value)]
    assert env["PATH"] == stdio_environment()["PATH"]
    assert sorted(set(env) - set(STDIO_INHERITED_ENV)) == []


def test_only_the_listed_variables_are_inherited() -> None:
    source = {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "AWS_SECRET_ACCESS_KEY": "x",
              "TOOLKEEPER_REGISTRY": "sqlite:///r.db"}
    assert stdio_environment(source) == {"HOME": "/h", "LANG": "C.UTF-8", "PATH": "/bin"}
