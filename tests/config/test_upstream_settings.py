"""``[[upstreams]]``: each table checked by the definitions and handed over in the stored form
of an upstream definition."""

from __future__ import annotations

import pytest

from toolkeeper.config.loader import parse_config
from toolkeeper.contracts.spec import SideEffect
from toolkeeper.errors import ConfigError
from toolkeeper.upstreams import UpstreamDefinition

_TWO = '''
[[upstreams]]
name = "time"
command = ["mcp-server-time", "--local-timezone", "UTC"]
prefix = "time."
[upstreams.drift]
descriptive = "publish"
[upstreams.tools.get_current_time]
side_effect = "read"

[[upstreams]]
name = "docs"
url = "http://127.0.0.1:9000/mcp"
era = "legacy"
'''


def test_each_table_becomes_a_definition() -> None:
    first, second = (UpstreamDefinition.from_mapping(u) for u in parse_config(_TWO).upstreams)
    assert (first.name, first.transport, first.command) == (
        "time", "stdio", ("mcp-server-time", "--local-timezone", "UTC"))
    assert first.exposed_name("get_current_time") == "time.get_current_time"
    assert first.drift.descriptive == "publish" and first.drift.major == "quarantine"
    assert first.override("get_current_time").side_effect is SideEffect.READ
    assert first.override("get_current_time").tenants is None
    assert (second.url, second.era, second.prefix, second.tools) == (
        "http://127.0.0.1:9000/mcp", "legacy", "", {})


def test_no_upstreams_by_default() -> None:
    assert parse_config("").upstreams == ()


@pytest.mark.parametrize(("text", "code", "key"), [
    ('[[upstreams]]\nname = "a"\n', "config.upstream_endpoint", "upstreams[0].url"),
    ('[[upstreams]]\nname = "a"\nurl = "http://x/"\ncommand = ["x"]\n',
     "config.upstream_endpoint", "upstreams[0].url"),
    ('[[upstreams]]\nurl = "http://x/"\n', "config.missing_key", "upstreams[0].name"),
    ('[[upstreams]]\nname = "a"\nurl = "http://x/"\n[[upstreams]]\nname = "a"\n'
     'command = ["y"]\n', "config.upstream_duplicate", "upstreams[1].name"),
    ('[[upstreams]]\nname = "a"\nurl = "http://x/"\n[upstreams.drift]\nmajor = "yes"\n',
     "config.not_allowed", "upstreams[0].drift.major"),
    ('[[upstreams]]\nname = "a"\nurl = "http://x/"\nside_effect = "none"\n',
     "config.not_allowed", "upstreams[0].side_effect"),
    ('[[upstreams]]\nname = "a"\nurl = "http://x/"\nwhat = 1\n',
     "config.unknown_key", "upstreams[0].what"),
    ('[[upstreams]]\nname = "a"\nurl = "http://x/"\n[upstreams.tools.t]\nera = "x"\n',
     "config.unknown_key", "upstreams[0].tools.t.era"),
])
def test_a_bad_table_is_refused_with_its_key(text: str, code: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert (caught.value.code, caught.value.data["key"]) == (code, key)


def test_a_bad_name_is_refused_by_the_definition() -> None:
    (mapping,) = parse_config('[[upstreams]]\nname = "a b"\nurl = "http://x/"\n').upstreams
    with pytest.raises(ConfigError) as caught:
        UpstreamDefinition.from_mapping(mapping)
    assert (caught.value.code, caught.value.data["key"]) == ("upstream.invalid", "name")
