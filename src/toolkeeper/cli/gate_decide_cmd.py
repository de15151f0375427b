"""The gate's decision commands (docs/gate.md): ``gate bundle``, ``gate evaluate``, ``gate sign``
and ``gate verify``.

``gate bundle --policy F --windows F --transcripts F... --sdk-diff F... --proxy F...
--rollback-evidence F [--boundary NAME...] --out FILE`` puts the evidence into one bundle (each
section redacted and digested) and prints its digest. ``gate evaluate BUNDLE [--json]``
decides: exit 0 promote, 1 rollback, 3 halt, 4 hold, 2 refused input (an empty transcript set,
SDK diff or proxy evidence; a digest that does not hold). ``gate sign BUNDLE --out FILE``
decides and writes the decision as a signed in-toto Statement in a DSSE envelope (the
configured signing key); ``gate verify ENVELOPE [--bundle BUNDLE]`` checks one offline: exit 0
when it verifies (and, with ``--bundle``, names exactly that bundle's evidence), 1 when it does
not, 2 when it is not an envelope. Keys come from ``--config``'s ``[gate]`` section or the
environment (:mod:`toolkeeper.gate.keys`), and ``--trust ID=FILE`` adds one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import click

from toolkeeper.cli.documents import read_document
from toolkeeper.cli.output import EXIT_HALT, EXIT_HOLD, EXIT_OK, EXIT_REFUSED, echo_json, fail
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.validate import validate
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.attestation import sign_decision, verify_envelope
from toolkeeper.gate.decision import HALT, HOLD, PROMOTE, ROLLBACK, Decision, bundle_schema, decide
from toolkeeper.gate.evidence import bundle, verify_bundle
from toolkeeper.gate.keys import (
    DEMO_KEY,
    SigningKey,
    load_trusted_key,
    require_signer,
    signing_key_from,
    trusted_keys_from,
)
from toolkeeper.gate.rollback import TrustedKey, verify
from toolkeeper.gate.windows import WindowPolicy

__all__ = ["CONFIG_OPTION", "DEMO_KEY_OPTION", "OUTCOME_EXIT", "TRUST_OPTION", "keys", "register"]

OUTCOME_EXIT: Final = {PROMOTE: EXIT_OK, ROLLBACK: EXIT_REFUSED, HALT: EXIT_HALT,
                       HOLD: EXIT_HOLD}
"""Each outcome's exit code; 2 is refused input."""


def _gate_settings(config_path: str | None) -> Any:
    if config_path is None:
        return None
    from toolkeeper.cli.sources import read_source
    from toolkeeper.config import load_config

    return load_config(config_path, read=read_source).gate


def keys(config_path: str | None, trust: tuple[str, ...], demo_key: bool = False
         ) -> tuple[SigningKey | None, dict[str, TrustedKey]]:
    """The signing key and the trusted keys (``--config``'s ``[gate]``, the environment, each
    ``--trust ID=FILE`` and, with ``demo_key``, the labelled demo fixture key, which also
    signs when no other key is configured); the signing key trusts itself."""
    settings = _gate_settings(config_path)
    signer = signing_key_from(settings, os.environ)
    trusted = trusted_keys_from(settings, os.environ)
    for entry in trust:
        key_id, sep, path = entry.partition("=")
        if not sep or not key_id or not path:
            raise ToolkeeperError(f"--trust {entry!r} is not ID=FILE", code="cli.option_invalid",
                                  data={"option": "--trust"})
        trusted[key_id] = load_trusted_key(None, Path(path))
    if demo_key:
        trusted[DEMO_KEY.key_id] = DEMO_KEY.trusted()
        signer = signer or DEMO_KEY
    if signer is not None:
        trusted.setdefault(signer.key_id, signer.trusted())
    return signer, trusted


CONFIG_OPTION = click.option("--config", "config_path", default=None, metavar="FILE",
                       help="A configuration file whose [gate] section names the keys.")
TRUST_OPTION = click.option("--trust", multiple=True, metavar="ID=FILE",
                      help="Trust one more key: an Ed25519 public key (PEM) or an HMAC secret.")
DEMO_KEY_OPTION = click.option("--demo-key", is_flag=True,
                         help="Trust (and, with no other key, sign with) the demo's fixed key: "
                              "a labelled non-secret fixture, for `gate demo`'s artefacts.")


def _write(path: str, value: Any) -> None:
    try:
        Path(path).write_bytes(canonical_json(value) + b"\n")
    except OSError as exc:
        raise ToolkeeperError(f"--out: cannot write {path} ({exc.strerror})",
                              code="cli.bad_output", data={"option": "--out"}) from None


def _checked_bundle(made: dict[str, Any]) -> None:
    """Refuse a bundle the gate could not judge, now rather than at evaluate: a section of
    the wrong shape (``evidence.malformed``, each path), a policy the windows cannot be judged
    under, rollback evidence missing a field or of the wrong type."""
    issues = validate(bundle_schema(), made)
    if issues:
        raise ToolkeeperError(f"the evidence is malformed: {issues[0].path}: "
                              f"{issues[0].message}", code="evidence.malformed",
                              data={"errors": [i.to_dict() for i in issues]})
    WindowPolicy.from_json(made["sections"]["policy"]["content"]["window"])
    shape = [r for r in verify(made["sections"]["rollbackEvidence"]["content"], {})
             if r["code"] in ("rollback.field_invalid", "rollback.digest_invalid")]
    if shape:
        raise ToolkeeperError(f"--rollback-evidence is not rollback evidence: {shape[0]['code']} "
                              f"at {shape[0]['path']}", code=shape[0]["code"],
                              data={"errors": shape})


def _reports(paths: tuple[str, ...]) -> list[Any]:
    return [read_document(path) for path in paths]


@click.command("bundle")
@click.option("--policy", "policy_path", required=True, metavar="FILE",
              help="The health-window policy the windows were judged under.")
@click.option("--windows", "windows_path", required=True, metavar="FILE",
              help="The health windows (`gate window ... --save FILE`).")
@click.option("--transcripts", multiple=True, metavar="FILE",
              help="A `conformance run --json` report (repeat for each run).")
@click.option("--sdk-diff", "sdk_diffs", multiple=True, metavar="FILE",
              help="A `conformance sdk-diff --json` report (repeat).")
@click.option("--proxy", "proxies", multiple=True, metavar="FILE",
              help="A `conformance proxy --json` report (repeat).")
@click.option("--rollback-evidence", "rollback_path", required=True, metavar="FILE",
              help="The signed rollback evidence (`gate rollback-evidence --json`).")
@click.option("--boundary", "boundaries", multiple=True, metavar="NAME",
              help="A boundary the transcripts must have observed (repeat).")
@click.option("--out", "out_path", required=True, metavar="FILE", help="Where to write it.")
def bundle_cmd(policy_path: str, windows_path: str, transcripts: tuple[str, ...],
               sdk_diffs: tuple[str, ...], proxies: tuple[str, ...], rollback_path: str,
               boundaries: tuple[str, ...], out_path: str) -> None:
    """Put the evidence into one bundle, each section redacted and digested."""
    try:
        policy: dict[str, Any] = {"window": read_document(policy_path)}
        if boundaries:
            policy["boundaries"] = sorted(set(boundaries))
        made = bundle({"policy": policy, "healthWindows": read_document(windows_path),
                       "transcripts": {"runs": _reports(transcripts)},
                       "sdkDiffs": {"reports": _reports(sdk_diffs)},
                       "proxyEvidence": {"reports": _reports(proxies)},
                       "rollbackEvidence": read_document(rollback_path)})
        _checked_bundle(made)
        _write(out_path, made)
    except ToolkeeperError as exc:
        fail(exc)
    click.echo(f"bundle {made['digest']} written to {out_path}")


def _decision(bundle_path: str, config_path: str | None, trust: tuple[str, ...],
              demo_key: bool, as_json: bool = False
              ) -> tuple[Decision, Any, SigningKey | None]:
    try:
        made = read_document(bundle_path)
        signer, trusted = keys(config_path, trust, demo_key)
        return decide(made, trusted), made, signer
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)


def _echo_decision(decision: Decision) -> None:
    counts = decision.counts()
    click.echo(f"decision: {decision.outcome} ({', '.join(f'{n} {k}' for k, n in counts.items())})")
    for reason in decision.reasons:
        detail = f" ({reason.detail})" if reason.detail else ""
        click.echo(f"  {reason.rule} {reason.status}: measured {reason.measured}, threshold "
                   f"{reason.threshold}{detail}")
    click.echo(f"evidence {decision.evidence_digest}")


@click.command("evaluate")
@click.argument("bundle_path", metavar="BUNDLE")
@CONFIG_OPTION
@TRUST_OPTION
@DEMO_KEY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
def evaluate_cmd(bundle_path: str, config_path: str | None, trust: tuple[str, ...],
                 demo_key: bool, as_json: bool) -> None:
    """Decide on a bundle: 0 promote, 1 rollback, 3 halt, 4 hold, 2 refused."""
    decision, _, _ = _decision(bundle_path, config_path, trust, demo_key, as_json)
    if as_json:
        echo_json(decision.to_dict())
    else:
        _echo_decision(decision)
    raise SystemExit(OUTCOME_EXIT[decision.outcome])


@click.command("sign")
@click.argument("bundle_path", metavar="BUNDLE")
@click.option("--out", "out_path", required=True, metavar="FILE",
              help="Where to write the DSSE envelope.")
@CONFIG_OPTION
@TRUST_OPTION
@DEMO_KEY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def sign_cmd(bundle_path: str, out_path: str, config_path: str | None,
             trust: tuple[str, ...], demo_key: bool, as_json: bool) -> None:
    """Decide on a bundle and write the decision, signed, as a DSSE envelope."""
    decision, made, signer = _decision(bundle_path, config_path, trust, demo_key, as_json)
    try:
        signer = require_signer(signer)
        envelope = sign_decision(decision, made["sections"]["policy"]["content"], signer)
        _write(out_path, envelope)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    if as_json:
        echo_json({"outcome": decision.outcome, "envelope": out_path,
                   "signer": {"keyid": signer.key_id, "algorithm": signer.algorithm,
                              "label": signer.label},
                   "evidenceDigest": decision.evidence_digest})
        return
    label = " (HMAC-SHA-256: internal, verifiable with the shared key only)" \
        if signer.algorithm == "hmac-sha256" else ""
    if signer.label:
        label += f" [{signer.label}]"
    click.echo(f"decision {decision.outcome} signed by {signer.key_id}{label}, written to "
               f"{out_path}")


def _bundle_refusals(statement: dict[str, Any], bundle_path: str) -> list[dict[str, str]]:
    """The bundle's own refusals (its digests recomputed: a changed byte of its evidence is
    refused even when the digests written in it are the ones the decision names), and
    ``attestation.evidence_mismatch`` when the decision names other evidence."""
    made = read_document(bundle_path)
    found = [{"code": r["code"], "path": f"bundle:{r['path']}"} for r in verify_bundle(made)]
    predicate = statement.get("predicate", {})
    sections = made.get("sections") if isinstance(made, dict) else None
    named = {name: kept.get("digest") for name, kept in sections.items()
             if isinstance(kept, dict)} if isinstance(sections, dict) else {}
    if found or predicate.get("evidenceDigest") != made.get("digest") \
            or predicate.get("inputs") != named:
        found.append({"code": "attestation.evidence_mismatch",
                      "path": "$.payload.predicate.inputs"})
    return found


@click.command("verify")
@click.argument("envelope_path", metavar="ENVELOPE")
@click.option("--bundle", "bundle_path", default=None, metavar="BUNDLE",
              help="Also check the decision names exactly this bundle's evidence.")
@CONFIG_OPTION
@TRUST_OPTION
@DEMO_KEY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def verify_cmd(envelope_path: str, bundle_path: str | None, config_path: str | None,
               trust: tuple[str, ...], demo_key: bool, as_json: bool) -> None:
    """Verify an attested decision offline: 0 verified, 1 refused, 2 not an envelope."""
    try:
        _, trusted = keys(config_path, trust, demo_key)
        statement, refusals = verify_envelope(read_document(envelope_path), trusted)
        if bundle_path is not None:
            refusals = sorted(refusals + _bundle_refusals(statement, bundle_path),
                              key=lambda r: (r["path"], r["code"]))
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    predicate = statement.get("predicate", {})
    if as_json:
        echo_json({"verified": not refusals, "refusals": refusals,
                   "outcome": predicate.get("outcome"), "signer": predicate.get("signer"),
                   "subject": statement.get("subject"),
                   "evidenceDigest": predicate.get("evidenceDigest")})
    elif refusals:
        for refusal in refusals:
            click.echo(f"refused: {refusal['code']} at {refusal['path']}")
    else:
        signer = predicate.get("signer", {})
        click.echo(f"verified: decision {predicate.get('outcome')} signed by "
                   f"{signer.get('keyid')} ({signer.get('algorithm')}), evidence "
                   f"{predicate.get('evidenceDigest')}")
    raise SystemExit(EXIT_REFUSED if refusals else EXIT_OK)


def register(group: click.Group) -> None:
    for command in (bundle_cmd, evaluate_cmd, sign_cmd, verify_cmd):
        group.add_command(command)
