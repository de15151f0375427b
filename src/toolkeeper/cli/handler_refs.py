"""Handler references (``module:ATTR`` or ``path/to/file.py:ATTR``) and the contracts their
typed handlers derive, as ``serve --handlers`` and ``contracts export`` load and publish them.

A reference that names nothing is ``cli.handlers_reference``; a module that raises while it
loads is ``cli.handlers_failed``; a typed tool the module declares badly keeps its own code
(``contract.typed_*``, ``contract.*``). All of them are bad input: nothing is written.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from toolkeeper.contracts.classify import classify
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import PublishRefusedError, ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.registry.guard import check_publish
from toolkeeper.server import ToolHandlers

__all__ = ["load_handlers", "publish_contracts"]


def _import(module_name: str) -> ModuleType:
    """A module by dotted name, or by file path when the name ends with ``.py``."""
    if not module_name.endswith(".py"):
        return importlib.import_module(module_name)
    path = Path(module_name).resolve()
    unique = "_toolkeeper_handlers_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(unique, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module_name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:
        del sys.modules[unique]
        raise ImportError(f"no such file: {module_name}") from None
    return module


def load_handlers(reference: str, *, option: str = "--handlers") -> ToolHandlers:
    """The :class:`ToolHandlers` a reference names (an attribute, or a function returning
    one); ``option`` names the argument in errors."""
    module_name, sep, attribute = reference.rpartition(":")
    if not sep or not module_name or not attribute:
        raise ToolkeeperError(f"{option} {reference!r}: expected module:attribute",
                              code="cli.handlers_reference")
    try:
        value: Any = getattr(_import(module_name), attribute)
        if callable(value) and not isinstance(value, ToolHandlers):
            value = value()
    except (ImportError, AttributeError) as exc:
        raise ToolkeeperError(f"{option} {reference!r}: {exc}",
                              code="cli.handlers_reference") from None
    except ToolkeeperError as exc:  # a typed tool declared badly: its own code
        raise ToolkeeperError(f"{option} {reference!r}: {exc.message}", code=exc.code,
                              path=exc.path, data=exc.data) from None
    except Exception as exc:  # the user's module failed while loading: bad input, no traceback
        raise ToolkeeperError(
            f"{option} {reference!r}: loading it raised {type(exc).__name__}: {exc}",
            code="cli.handlers_failed") from None
    if not isinstance(value, ToolHandlers):
        raise ToolkeeperError(f"{option} {reference!r} is not a ToolHandlers",
                              code="cli.handlers_reference")
    return value


def publish_contracts(registry: Registry, specs: Sequence[ToolSpec], *, actor: str
                      ) -> list[str]:
    """Publish derived contracts through the publish guard, all or none: each is first judged
    against the stored history of its name (and the batch's earlier versions of it), and the
    first refusal is published for real, so the registry refuses and audits it in its own
    transaction and nothing of the batch is stored. Returns what was done; an identical
    re-publish does nothing."""
    accepted: dict[str, list[ToolSpec]] = {}
    for spec in specs:
        history = [*registry.versions(spec.name), *accepted.get(spec.name, [])]
        try:
            check_publish(history, spec, classify)
        except PublishRefusedError:
            registry.publish_outcome(spec, actor=actor)  # raises (unless the store moved on)
        accepted.setdefault(spec.name, []).append(spec)
    return [f"published {spec.name} {spec.version}" for spec in specs
            if registry.publish_outcome(spec, actor=actor).created]
