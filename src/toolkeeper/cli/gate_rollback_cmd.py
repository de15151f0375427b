"""``toolkeeper gate rollback-evidence TOOL --version V`` (docs/gate.md): the signed rollback
evidence of one stored version, built from the registry (:mod:`toolkeeper.gate.rollback_evidence`).

Its health is the call log's window for that version under a policy (``--policy F --since S
[--until U]``, as ``gate window --calls`` reads it) or a ``gate window --json`` output
(``--window FILE``): healthy when its status is ``healthy``. A native tool's artifact is the
SHA-256 of its handler's module file, the handlers found as ``serve`` finds them (``--handlers``,
``--demo``, or the ``[estate]`` of ``--config``); a typed tool's handler is toolkeeper's own
wrapper, so its artifact is the module the handler reference names. The evidence is signed with
the key ``[gate]`` of ``--config`` names, else ``TOOLKEEPER_GATE_KEY_ID`` and
``TOOLKEEPER_GATE_KEY_FILE`` (none: ``gate.no_signing_key``).

Exit 0: the evidence verifies as a rollback target under the trusted keys (``[gate]``'s,
``TOOLKEEPER_GATE_TRUSTED_KEYS``'s, and the signer's own); 1: built, but refused as a target
(each refusal printed after it, on standard error with ``--json``: ``rollback.not_active``,
``rollback.unhealthy``, ...);
2: bad input (``registry.not_found``, ``gate.no_admission_record``, ``gate.no_artifact``,
``gate.key_invalid``, ``gate.window_invalid``, a file that cannot be read).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from toolkeeper.cli.calls_cmd import window_bounds
from toolkeeper.cli.documents import read_document
from toolkeeper.cli.handler_refs import load_handlers
from toolkeeper.cli.output import EXIT_OK, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.sources import read_source
from toolkeeper.config import load_config
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate import FAILED, HEALTHY, INCONCLUSIVE, WindowPolicy, evaluate
from toolkeeper.gate.call_windows import windows_from_log
from toolkeeper.gate.keys import require_signer, signing_key_from, trusted_keys_from
from toolkeeper.gate.rollback import verify
from toolkeeper.gate.rollback_evidence import ArtifactResolver, build_evidence
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers

__all__ = ["artifact_resolver", "register", "rollback_evidence_cmd", "window_healthy"]

_DEMO_REFERENCE = "toolkeeper.demo.handlers:demo_handlers"
_STATUSES = (HEALTHY, FAILED, INCONCLUSIVE)


@click.command("rollback-evidence")
@click.argument("tool")
@click.option("--version", "version", required=True, help="The version to roll back to.")
@click.option("--registry", "registry_url", default=None, metavar="URL",
              help="The registry (default: registry.url of --config, else TOOLKEEPER_REGISTRY, "
                   "else the default SQLite file).")
@click.option("--policy", "policy_path", default=None, metavar="FILE",
              help="The health-window policy its call-log window is judged under (with --since).")
@click.option("--since", default=None, metavar="TIME|AGE",
              help="With --policy: the window's start, ISO-8601 (UTC if no zone) or an age.")
@click.option("--until", default=None, metavar="TIME|AGE",
              help="With --policy: the window's end (default: now).")
@click.option("--window", "window_path", default=None, metavar="FILE",
              help="Its health as a `gate window --json` output, instead of --policy.")
@click.option("--handlers", "handler_refs", multiple=True, metavar="MODULE:ATTR",
              help="Handler modules, as `serve --handlers` takes them (repeatable).")
@click.option("--demo", is_flag=True, help="The demo estate's handlers too.")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="The configuration: [gate] keys, [estate] handlers, registry.url.")
@click.option("--json", "as_json", is_flag=True, help="Print the evidence as canonical JSON.")
def rollback_evidence_cmd(tool: str, version: str, registry_url: str | None,
                          policy_path: str | None, since: str | None, until: str | None,
                          window_path: str | None, handler_refs: tuple[str, ...], demo: bool,
                          config_path: str | None, as_json: bool) -> None:
    """Build and sign TOOL's rollback evidence for --version: 0 a verified rollback target,
    1 refused as one, 2 bad input."""
    try:
        config = load_config(config_path, read=read_source)
        key = require_signer(signing_key_from(config.gate, os.environ))
        trusted = {key.key_id: key.trusted(), **trusted_keys_from(config.gate, os.environ)}
        url = registry_url or config.registry.url or None
        healthy = window_healthy(policy_path, since, until, window_path, url, tool, version)
        artifact = artifact_resolver(handler_refs or config.estate.handlers, demo or config.estate.demo)
        with Registry.open(url, create=False, read_only=True) as registry:
            evidence = build_evidence(registry, tool, version, key, healthy=healthy,
                                      artifact=artifact)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    refusals = verify(evidence, trusted)
    _show(evidence, as_json, key.label)
    for refusal in refusals:  # with --json, standard output holds the evidence alone
        click.echo(f"refused: {refusal['code']} at {refusal['path']}", err=as_json)
    raise SystemExit(EXIT_REFUSED if refusals else EXIT_OK)


def _show(evidence: dict[str, Any], as_json: bool, label: str | None) -> None:
    attestation = evidence["attestation"]
    if label:
        click.echo(f"signing key {attestation['signer']}: {label}", err=True)
    if as_json:
        echo_json(evidence)
        return
    health = "healthy" if evidence["healthy"] else "not healthy"
    click.echo(f"rollback evidence: {evidence['tool']} {evidence['version']} "
               f"({evidence['registryStatus']}, {health}), signed by {attestation['signer']} "
               f"({attestation['algorithm']})")
    click.echo(f"  admission   {evidence['admissionDigest']}")
    click.echo(f"  artifact    {evidence['artifactSha256']}")
    click.echo(f"  descriptor  {evidence['descriptorSha256']}")
    click.echo(f"  restore     {evidence['routeRestore'] or '(it is the newest active version)'}")
    digest = hashlib.sha256(canonical_json(evidence)).hexdigest()
    click.echo(f"  evidence    sha256:{digest}")


def window_healthy(policy_path: str | None, since: str | None, until: str | None,
                   window_path: str | None, url: str | None, tool: str,
                   version: str) -> bool:
    """Whether the version's health window is ``healthy``: the call log's under a policy, or
    a ``gate window --json`` output."""
    if window_path is not None:
        if policy_path is not None or since is not None or until is not None:
            raise ToolkeeperError("--window is the health result: drop --policy, --since and "
                                  "--until", code="cli.option_conflict",
                                  data={"option": "--window"})
        return _window_status(read_document(window_path), window_path) == HEALTHY
    if policy_path is None or since is None:
        missing = "--policy" if policy_path is None else "--since"
        raise ToolkeeperError(f"give the health window: --policy FILE --since S, or --window "
                              f"FILE ({missing} is missing)", code="cli.option_missing",
                              data={"option": missing})
    policy = WindowPolicy.from_json(read_document(policy_path))
    start, end = window_bounds(since, until)
    logged = str(Version.parse(version))
    window = windows_from_log(url, tool, [logged], start, end)[logged]
    # the version in force on its own: the rules that compare with a baseline do not apply
    return evaluate(policy.absolute(), window).status == HEALTHY


def _window_status(data: Any, path: str) -> str:
    status = data.get("status") if isinstance(data, dict) else None
    if status not in _STATUSES:
        raise ToolkeeperError(f"{path} is not a `gate window --json` result (no status of "
                              f"{', '.join(_STATUSES)})", code="gate.window_invalid",
                              path="$.status", data={"file": path})
    return str(status)


def artifact_resolver(references: Sequence[str], demo: bool) -> ArtifactResolver | None:
    """The SHA-256 of the module file of each native tool version's handler."""
    loaded: list[tuple[str, ToolHandlers]] = [(ref, load_handlers(ref)) for ref in references]
    if demo:
        from toolkeeper.demo import demo_handlers

        loaded.append((_DEMO_REFERENCE, demo_handlers()))
    if not loaded:
        return None

    def resolve(spec: ToolSpec) -> str | None:
        for reference, handlers in loaded:
            binding = handlers.lookup(spec.name, spec.version)
            if binding is not None:
                return _sha256(_module_file(binding.function, reference))
        return None
    return resolve


def _module_file(function: Callable[..., Any], reference: str) -> Path:
    """The source file of ``function``'s module; for toolkeeper's own wrapper (a typed tool's
    binding), the module the handler reference names."""
    module_name = getattr(function, "__module__", "") or ""
    if not module_name.startswith("toolkeeper.server"):
        source = inspect.getsourcefile(inspect.unwrap(function))
        if source is not None:
            return Path(source)
    named = reference.rpartition(":")[0]
    if named.endswith(".py"):
        return Path(named).resolve()
    found = getattr(importlib.import_module(named), "__file__", None)
    if found is None:
        raise ToolkeeperError(f"handler module {named} has no source file",
                              code="gate.no_artifact", data={"reference": reference})
    return Path(found)


def _sha256(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise ToolkeeperError(f"handler module {path} cannot be read: {exc.strerror}",
                              code="gate.no_artifact", data={"path": str(path)}) from None


def register(group: click.Group) -> None:
    """Add ``rollback-evidence`` to ``group`` (the ``gate`` group)."""
    group.add_command(rollback_evidence_cmd)
