"""Canonical JSON of a large object: byte-identical to msgspec's sorted encoding, and made
without msgspec's sort, which overflows the C stack (a segmentation fault) on an object of
about 50,000 keys sorted but for its first one. A request body within the 4 MiB limit holds
300,000 such keys, so every encoding of caller data must survive it."""

from __future__ import annotations

import random
import subprocess
import sys

import msgspec

from toolkeeper.contracts.canonical import SORTED_IN_C_BELOW, canonical_json, key_sorted

_SORTED = msgspec.json.Encoder(order="sorted")


def _mixed_keys(count: int) -> list[str]:
    alphabet = ["a", "Z", "é", "ß", "中", "𝄞", "0", "_", "~"]
    rng = random.Random(7)
    keys = {"".join(rng.choice(alphabet) for _ in range(6)) + str(n) for n in range(count)}
    shuffled = sorted(keys)
    rng.shuffle(shuffled)
    return shuffled


def test_a_large_object_encodes_as_msgspec_sorts_it() -> None:
    # 12,000 shuffled keys: past the size msgspec sorts here, in an order its sort survives.
    value = {"outer": {key: [{"b": 1, "a": key}] for key in _mixed_keys(12_000)}, "n": 1}
    assert len(msgspec.json.encode(value)) >= SORTED_IN_C_BELOW
    assert canonical_json(value) == _SORTED.encode(value)


def test_a_small_object_is_msgspecs_sorted_encoding() -> None:
    value = {"b": [3, {"y": None, "x": True}], "a": "é", "𝄞": 2**70}
    assert canonical_json(value) == _SORTED.encode(value) == (
        '{"a":"é","b":[3,{"x":true,"y":null}],"𝄞":1180591620717411303424}'.encode())


def test_key_sorted_orders_every_object_and_keeps_arrays_in_order() -> None:
    assert list(key_sorted({"b": {"d": 1, "c": 2}, "a": [{"f": 1, "e": 2}]}).items()) == [
        ("a", [{"e": 2, "f": 1}]), ("b", {"c": 2, "d": 1})]


def test_an_object_of_300000_keys_sorted_but_the_first_does_not_kill_the_process() -> None:
    # Run apart: a regression is a segmentation fault, which would end this test run.
    script = (
        "from toolkeeper.contracts.canonical import canonical_json\n"
        "from toolkeeper.protocol.envelope import encode_message\n"
        "value = {'n': 1, **{f'k{i:07d}': 0 for i in range(300_000)}}\n"
        "digest = canonical_json(value)\n"
        "wire = encode_message({'jsonrpc': '2.0', 'id': 1, 'result': value})\n"
        "assert digest.startswith(b'{\"k0000000\":0,') and digest.endswith(b',\"n\":1}')\n"
        "print(len(digest), len(wire))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert (done.returncode, done.stdout.split()) == (0, ["3900007", "3900041"]), done.stderr
