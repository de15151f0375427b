"""Rollback evidence built from the registry (SPEC 6, seed 004): what
:func:`~toolkeeper.gate.rollback.verify` checks, read from the store rather than asserted.

For one stored version of a tool, :func:`evidence_payload` fills every field of
:data:`~toolkeeper.gate.rollback.FIELDS`:

* ``admissionDigest``: the digest of the publish guard's admission record of that version
  (:meth:`~toolkeeper.registry.Registry.admission`); a version published before the store
  kept them has none, and is refused (``gate.no_admission_record``), never given one made up;
* ``descriptorSha256``: the contract's digest (the SHA-256 of its content's canonical JSON), the
  one the admission record names (a record naming another is ``gate.admission_mismatch``);
* ``artifactSha256``: for a tool imported from an upstream server, the upstream descriptor's
  digest that version was published from (the registry's upstream tool rows); for a native
  tool, what the caller's ``artifact`` resolver gives (the CLI hashes the handler's module
  file: this package does not import the server); neither is ``gate.no_artifact``;
* ``registryStatus``: the version's status (``active``, ``deprecated``, ``retired``);
* ``healthy``: the caller's judgement of its health window;
* ``routeRestore``: the command that sends unpinned traffic back to it (:func:`route_restore`).

:func:`build_evidence` signs the payload with a :class:`~toolkeeper.gate.keys.SigningKey`.
An unknown tool or version is :class:`~toolkeeper.errors.NotFoundError` ``registry.not_found``,
as the registry says it.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec
from toolkeeper.errors import StoreError, ToolkeeperError
from toolkeeper.gate.keys import SigningKey
from toolkeeper.registry import Registry
from toolkeeper.registry.records import as_version, not_found
from toolkeeper.registry.upstream_records import upstream_store

__all__ = ["ArtifactResolver", "build_evidence", "evidence_payload", "route_restore",
           "upstream_artifact"]

ArtifactResolver = Callable[[ToolSpec], str | None]
"""A native tool version -> the SHA-256 (hex) of its artifact, or None when unknown."""


def upstream_artifact(registry: Registry, tool: str, version: Version) -> str | None:
    """The upstream descriptor digest ``tool`` ``version`` was published from, or None when
    no upstream tool of the registry exposes that version."""
    try:
        store = upstream_store(registry.store)
    except StoreError:
        return None
    for upstream in store.upstream_names():
        for record in store.upstream_tools(upstream):
            if record.exposed != tool:
                continue
            for published, digest in record.versions.items():
                if Version.parse(published) == version:
                    return digest
    return None


def route_restore(registry: Registry, spec: ToolSpec) -> str:
    """The command that makes ``spec`` the version unpinned calls reach: deprecating every
    active version newer than it (``toolkeeper deprecate TOOL NEWER --successor VERSION``,
    joined with ``&&``); empty when it is already the newest active version."""
    newer = [s for s in registry.versions(spec.name)
             if s.version > spec.version and s.status is Status.ACTIVE]
    return " && ".join(shlex.join(["toolkeeper", "deprecate", spec.name, str(s.version),
                                   "--successor", str(spec.version)]) for s in newer)


def evidence_payload(registry: Registry, tool: str, version: Version | str, *, healthy: bool,
                     artifact: ArtifactResolver | None = None) -> dict[str, Any]:
    """The unsigned rollback evidence of ``tool`` ``version`` (see the module docstring)."""
    parsed = as_version(version)
    spec = registry.get(tool, parsed)
    if spec is None:
        raise not_found(tool, parsed)
    where = {"tool": tool, "version": str(spec.version)}
    admission = registry.admission(tool, spec.version)
    if admission is None:
        raise ToolkeeperError(f"{tool} {spec.version} has no admission record (published "
                              "before the registry kept them): there is no evidence of what "
                              "the publish guard decided", code="gate.no_admission_record",
                              data=where)
    if admission.contract_digest != spec.content_digest:
        raise ToolkeeperError(f"the admission record of {tool} {spec.version} names another "
                              "contract", code="gate.admission_mismatch", data=where)
    digest = upstream_artifact(registry, tool, spec.version)
    if digest is None and artifact is not None:
        digest = artifact(spec)
    if digest is None:
        raise ToolkeeperError(f"no artifact known for {tool} {spec.version}: neither an "
                              "upstream tool nor a handler module", code="gate.no_artifact",
                              data=where)
    return {"tool": tool, "version": str(spec.version), "admissionDigest": admission.digest,
            "artifactSha256": digest, "descriptorSha256": spec.content_digest,
            "registryStatus": spec.status.value, "healthy": healthy,
            "routeRestore": route_restore(registry, spec)}


def build_evidence(registry: Registry, tool: str, version: Version | str, key: SigningKey, *,
                   healthy: bool, artifact: ArtifactResolver | None = None) -> dict[str, Any]:
    """:func:`evidence_payload`, signed with ``key``."""
    return key.sign_evidence(evidence_payload(registry, tool, version, healthy=healthy,
                                              artifact=artifact))
