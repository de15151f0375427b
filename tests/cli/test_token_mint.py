"""``toolkeeper token mint``: a development JWT signed with an issuer's local key, accepted by
a real gateway started with the same configuration, and refused (stable code, exit non-zero)
for an issuer without a local key, an unknown issuer, or claims the gateway would refuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from jwt.algorithms import RSAAlgorithm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from process_kit import SRC, serving_gateway

RSA_ISSUER = "https://dev-rsa.example"
HS_ISSUER = "https://dev-hs.example"
ED_ISSUER = "https://dev-ed.example"
PUBLIC_ONLY = "https://public-only.example"
MISMATCH = "https://mismatch.example"
RESOURCE = "http://127.0.0.1/mcp"


def _private_pem(key: Any) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _public_pem(key: Any) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def _jwks(*keys: tuple[str, Any]) -> str:
    entries = []
    for kid, key in keys:
        entry = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
        entries.append({**entry, "kid": kid, "use": "sig", "alg": "RS256"})
    return json.dumps({"keys": entries})


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gateway configuration with five issuers: RS256 with a JWKS file and its private key
    (two keys in the set, so the token must name the right kid), HS256 with a secret file,
    EdDSA with a public key file and its private key, RS256 with a public key only, and RS256
    whose private key is not in its JWKS."""
    root = tmp_path_factory.mktemp("token")
    signing, other, stranger = (rsa.generate_private_key(public_exponent=65537, key_size=2048)
                                for _ in range(3))
    edwards = ed25519.Ed25519PrivateKey.generate()
    (root / "rsa.pem").write_bytes(_private_pem(signing))
    (root / "stranger.pem").write_bytes(_private_pem(stranger))
    (root / "jwks.json").write_text(_jwks(("other-1", other), ("dev-1", signing)))
    (root / "other.pub.pem").write_bytes(_public_pem(other))
    (root / "ed.pem").write_bytes(_private_pem(edwards))
    (root / "ed.pub.pem").write_bytes(_public_pem(edwards))
    (root / "secret").write_text("s" * 48 + "\n")
    (root / "gateway.toml").write_text(f"""
[registry]
url = "sqlite:///{root / 'registry.db'}"

[server]
port = 0

[estate]
demo = true

[auth]
methods = ["jwt"]
resource = "{RESOURCE}"

[auth.jwt]
max_token_lifetime_s = 7200

[[auth.jwt.issuers]]
issuer = "{RSA_ISSUER}"
jwks_file = "jwks.json"
private_key_file = "rsa.pem"
tenants = ["acme"]

[[auth.jwt.issuers]]
issuer = "{HS_ISSUER}"
algorithms = ["HS256"]
secret_file = "secret"
tenants = ["acme", "globex"]
max_token_lifetime_s = 600

[[auth.jwt.issuers]]
issuer = "{ED_ISSUER}"
algorithms = ["EdDSA"]
public_key_file = "ed.pub.pem"
private_key_file = "ed.pem"
audience = "toolkeeper-dev"
tenants = ["acme"]

[[auth.jwt.issuers]]
issuer = "{PUBLIC_ONLY}"
public_key_file = "other.pub.pem"
tenants = ["acme"]

[[auth.jwt.issuers]]
issuer = "{MISMATCH}"
jwks_file = "jwks.json"
private_key_file = "stranger.pem"
tenants = ["acme"]
""")
    return root / "gateway.toml"


def toolkeeper(*args: str) -> subprocess.CompletedProcess[str]:
    """``toolkeeper ARGS`` as a real process on this checkout's sources."""
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("TOOLKEEPER_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "toolkeeper", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def mint(config: Path, issuer: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return toolkeeper("token", "mint", "--config", str(config), "--issuer", issuer, *extra)


@pytest.fixture(scope="module")
def gateway(config: Path) -> Iterator[str]:
    with serving_gateway(["--config", str(config)]) as url:
        yield url


def _listed(url: str, token: str) -> tuple[int, list[str]]:
    done = toolkeeper("tools", "--url", url, "--token", token, "--json")
    if done.returncode != 0:
        return done.returncode, [json.loads(done.stdout)["error"]["code"]]
    return 0, [tool["name"] for tool in json.loads(done.stdout)["tools"]]


CONFIDENTIAL = ("--tenant", "acme", "--scope", "payments.read", "--clearance", "confidential")


@pytest.mark.parametrize("issuer", [RSA_ISSUER, HS_ISSUER])
def test_a_minted_token_is_accepted_by_the_gateway_over_http_with_its_claims(
        config: Path, gateway: str, issuer: str) -> None:
    done = mint(config, issuer, *CONFIDENTIAL, "--lifetime", "300")
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert "development" in done.stderr and token not in done.stderr
    assert _listed(gateway, token) == (0, ["payments.lookup"])  # scope and clearance carried
    public = mint(config, issuer, "--tenant", "acme", "--lifetime", "300").stdout.strip()
    assert _listed(gateway, public) == (0, [])  # public clearance: the confidential tool hidden


def test_an_unsigned_or_foreign_token_is_refused_by_the_same_gateway(gateway: str) -> None:
    forged = jwt.encode({"iss": RSA_ISSUER, "sub": "x", "aud": RESOURCE, "exp": 2**31,
                         "tenant": "acme"}, "k" * 32, algorithm="HS256")
    code, errors = _listed(gateway, forged)
    assert code == 2 and errors[0].startswith("client.")


def test_the_rsa_token_names_the_jwks_key_it_was_signed_with_and_bounded_claims(
        config: Path) -> None:
    done = mint(config, RSA_ISSUER, *CONFIDENTIAL, "--subject", "ci", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["development"] is True
    assert out["header"] == {"alg": "RS256", "kid": "dev-1", "typ": "JWT"}
    assert jwt.get_unverified_header(out["token"])["kid"] == "dev-1"
    claims = out["claims"]
    assert (claims["iss"], claims["sub"], claims["aud"]) == (RSA_ISSUER, "ci", RESOURCE)
    assert (claims["tenant"], claims["scope"], claims["clearance"]) == (
        "acme", "payments.read", "confidential")
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"]
    assert jwt.decode(out["token"], options={"verify_signature": False}) == claims


def test_an_eddsa_issuer_with_a_public_key_file_signs_for_its_own_audience(
        config: Path) -> None:
    done = mint(config, ED_ISSUER, "--tenant", "acme", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["header"] == {"alg": "EdDSA", "typ": "JWT"}
    public = serialization.load_pem_public_key((config.parent / "ed.pub.pem").read_bytes())
    claims = jwt.decode(out["token"], public, algorithms=["EdDSA"], audience="toolkeeper-dev")
    assert claims["iss"] == ED_ISSUER


@pytest.mark.parametrize(("issuer", "extra", "status", "code"), [
    (PUBLIC_ONLY, (), 1, "token.no_local_key"),
    ("https://nobody.example", (), 2, "token.unknown_issuer"),
    (MISMATCH, (), 1, "token.key_mismatch"),
    (RSA_ISSUER, ("--tenant", "globex"), 1, "token.tenant_not_allowed"),
    (RSA_ISSUER, ("--lifetime", "7201"), 1, "token.lifetime_too_long"),
    (HS_ISSUER, ("--lifetime", "601"), 1, "token.lifetime_too_long"),
    (RSA_ISSUER, ("--clearance", "secret"), 2, "principal.clearance_unknown"),
])
def test_a_token_the_gateway_would_refuse_is_never_minted(
        config: Path, issuer: str, extra: tuple[str, ...], status: int, code: str) -> None:
    args = extra if "--tenant" in extra else ("--tenant", "acme", *extra)
    done = mint(config, issuer, *args, "--json")
    assert (done.returncode, json.loads(done.stdout)["error"]["code"]) == (status, code)
    text = mint(config, issuer, *args)
    assert (text.returncode, text.stdout) == (status, "")
    assert f"[{code}]" in text.stderr


def test_the_unknown_issuer_refusal_lists_the_configured_issuers(config: Path) -> None:
    done = mint(config, "https://nobody.example", "--tenant", "acme", "--json")
    data = json.loads(done.stdout)["error"]["data"]
    assert data == {"issuer": "https://nobody.example",
                    "issuers": [RSA_ISSUER, HS_ISSUER, ED_ISSUER, PUBLIC_ONLY, MISMATCH]}


def test_the_audience_defaults_to_the_url_the_listen_address_derives(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("t" * 40)
    (tmp_path / "gw.toml").write_text(f"""
[server]
port = 8123
path = "/tools"

[[auth.jwt.issuers]]
issuer = "{HS_ISSUER}"
algorithms = ["HS256"]
secret_file = "secret"
""")
    done = mint(tmp_path / "gw.toml", HS_ISSUER, "--tenant", "acme", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["claims"]["aud"] == "http://127.0.0.1:8123/tools"


def test_a_configuration_that_does_not_load_is_bad_input_with_its_key(tmp_path: Path) -> None:
    (tmp_path / "gw.toml").write_text('[[auth.jwt.issuers]]\nissuer = "x"\n'
                                      'private_key_file = "missing.pem"\n')
    done = mint(tmp_path / "gw.toml", "x", "--tenant", "acme", "--json")
    error = json.loads(done.stdout)["error"]
    assert (done.returncode, error["code"], error["data"]["key"]) == (
        2, "config.unreadable_file", "auth.jwt.issuers[0].private_key_file")
