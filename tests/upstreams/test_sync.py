"""Sync: the upstream's credential comes from its token file (or the bearer line of its header
file) and an unreadable one is refused without quoting it; one sync of an upstream at a time;
a descriptor the client drops as malformed is reported invalid while the others import."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkeeper.errors import ConfigError, StoreError
from toolkeeper.registry import MemoryStore, Registry
from toolkeeper.upstreams.credentials import upstream_headers
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.sync import sync

SERVER = Path(__file__).with_name("drift_upstream_server.py")


@pytest.fixture
def registry() -> Iterator[Registry]:
    reg = Registry(MemoryStore())
    yield reg
    reg.close()


def test_the_token_file_content_is_the_bearer_token(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("  s3cret-token\n", encoding="utf-8")
    defn = UpstreamDefinition(name="a", url="http://127.0.0.1:1/mcp", token_file=str(token))
    assert upstream_headers(defn) == {"Authorization": "Bearer s3cret-token"}
    assert upstream_headers(UpstreamDefinition(name="a", url="http://127.0.0.1:1/mcp")) == {}


def test_the_header_files_lines_are_the_headers_its_authorization_among_them(tmp_path: Path
                                                                            ) -> None:
    headers = tmp_path / "headers"
    headers.write_text("X-Team: files\nauthorization: Bearer abc.def\n", encoding="utf-8")
    defn = UpstreamDefinition(name="a", url="http://127.0.0.1:1/mcp", header_file=str(headers))
    assert upstream_headers(defn) == {"X-Team": "files", "authorization": "Bearer abc.def"}


def test_an_unreadable_credential_file_is_refused_without_its_content(tmp_path: Path) -> None:
    defn = UpstreamDefinition(name="a", url="http://127.0.0.1:1/mcp",
                              token_file=str(tmp_path / "absent"))
    with pytest.raises(ConfigError) as caught:
        upstream_headers(defn)
    assert caught.value.code == "upstream.credential_unreadable"
    assert caught.value.data == {"upstream": "a", "key": "token_file"}


def test_a_sync_while_another_of_the_same_upstream_runs_is_busy(registry: Registry) -> None:
    ups = Upstreams(registry)
    ups.add(UpstreamDefinition(name="files", command=("never-started",)), origin="cli",
            actor="ops")
    with ups.sync_lock("files"), pytest.raises(StoreError) as caught:
        asyncio.run(sync(ups, "files", actor="sync"))
    assert caught.value.code == "upstream.sync_busy"


def test_a_descriptor_the_client_drops_is_reported_invalid_and_the_rest_import(
        registry: Registry, tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([
        {"name": "", "description": "No name.", "inputSchema": {"type": "object"}},
        {"name": "ok", "description": "Fine.", "inputSchema": {"type": "object"}},
    ]), encoding="utf-8")
    ups = Upstreams(registry)
    ups.add(UpstreamDefinition(name="files", command=(sys.executable, str(SERVER), str(tools))),
            origin="cli", actor="ops")
    report = asyncio.run(sync(ups, "files", actor="sync"))
    assert [(o.tool, o.action, o.code) for o in report.tools] == [
        ("", "invalid", "upstream.tool_invalid"), ("ok", "imported", None)]
    assert report.tools[0].data["path"] is not None
