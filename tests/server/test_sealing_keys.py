"""The gateway's sealing keys: from the key file, else the environment variable, else an
ephemeral key; a bad key is refused by position and never echoed."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from toolkeeper.errors import ConfigError
from toolkeeper.protocol.sealing import Sealer, SealError
from toolkeeper.server.sealing import SealingSettings, build_sealer, parse_sealing_keys

KEY_A, KEY_B = b"a" * 32, b"b" * 32
TEXT_A, TEXT_B = (base64.b64encode(k).decode() for k in (KEY_A, KEY_B))
ENV = "TOOLKEEPER_SEALING_KEYS"


def _opens(sealer_keys: list[bytes], sealer_under_test: Sealer) -> bool:
    token = Sealer(sealer_keys).seal("p", {}, 1, ttl_s=60, now=0)
    try:
        return sealer_under_test.open(token, "p", {}, now=1) == 1
    except SealError:
        return False


def test_keys_are_base64_of_32_bytes_in_either_alphabet_separated_by_commas_or_space() -> None:
    urlsafe = base64.urlsafe_b64encode(b"\xfb" * 32).decode()
    assert parse_sealing_keys(f" {TEXT_A},\n{urlsafe}  {TEXT_B}\n") == (KEY_A, b"\xfb" * 32,
                                                                        KEY_B)


@pytest.mark.parametrize("text", [
    base64.b64encode(b"k" * 31).decode(), base64.b64encode(b"k" * 33).decode(),
    "not base64!", TEXT_A[:-2],
], ids=["31-bytes", "33-bytes", "junk", "unpadded-short"])
def test_a_bad_key_is_refused_by_position_without_echoing_it(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_sealing_keys(f"{TEXT_A}\n{text}")
    code, reason = caught.value.args
    assert code == "config.bad_value" and "key 2" in reason and text not in reason


def test_the_key_file_seals_with_its_first_key_and_opens_with_every_key(tmp_path: Path) -> None:
    (tmp_path / "keys").write_text(f"{TEXT_B}\n{TEXT_A}\n")
    sealer = build_sealer(SealingSettings(keys_file=str(tmp_path / "keys")), {ENV: TEXT_A})
    assert not sealer.ephemeral_key
    assert _opens([KEY_A], sealer) and _opens([KEY_B], sealer)
    token = sealer.seal("p", {}, 1, ttl_s=60, now=0)
    assert build_sealer(SealingSettings(), {ENV: TEXT_B}).open(token, "p", {}, now=1) == 1


def test_without_a_key_file_the_environment_variable_gives_the_keys() -> None:
    sealer = build_sealer(SealingSettings(), {ENV: f"{TEXT_A},{TEXT_B}"})
    assert not sealer.ephemeral_key and _opens([KEY_B], sealer)


def test_a_renamed_variable_is_read_instead_of_the_default_one() -> None:
    sealer = build_sealer(SealingSettings(keys_env="MY_KEYS"), {"MY_KEYS": TEXT_A, ENV: TEXT_B})
    assert _opens([KEY_A], sealer) and not _opens([KEY_B], sealer)


def test_without_any_key_the_sealer_is_ephemeral() -> None:
    assert build_sealer(SealingSettings(), {}).ephemeral_key
    assert build_sealer(SealingSettings(keys_env=""), {"": TEXT_A}).ephemeral_key


@pytest.mark.parametrize("value", ["", " , ", "short"], ids=["empty", "separators", "junk"])
def test_a_variable_that_is_set_without_a_usable_key_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_sealer(SealingSettings(), {ENV: value})
    assert (caught.value.code, caught.value.data) == ("config.bad_value",
                                                      {"key": "sealing.keys_env"})
    assert value.strip(" ,") == "" or value not in caught.value.message


def test_a_key_file_gone_since_the_configuration_was_loaded_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        build_sealer(SealingSettings(keys_file=str(tmp_path / "gone")), {})
    assert (caught.value.code, caught.value.data) == ("config.unreadable_file",
                                                      {"key": "sealing.keys_file"})
