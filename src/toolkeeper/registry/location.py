"""Where the registry lives: a URL (``--registry`` / ``TOOLKEEPER_REGISTRY``) to a store.

* ``memory:`` - an in-process store (tests, demos); nothing persists.
* ``sqlite:///abs/path.db`` - everything after ``sqlite://`` is the file path, so three slashes
  give an absolute path and ``sqlite://relative.db`` a relative one. The default when no URL is
  given: ``registry.db`` in the user's data directory (platformdirs), whose directory is created
  on demand. For any other path the directory must exist (a typo is an error, not a new tree),
  and with ``create=False`` (commands that change or read what is there) so must the file. A
  path that names something other than a file is ``registry.not_a_file``.
* ``postgresql://...`` (or ``postgres://``) - a libpq connection URI.

``read_only=True`` (commands that only read) opens the store so that it is never written: the
SQLite file read-only, a PostgreSQL session whose transactions are read-only, and neither
migrated (implies ``create=False``). An empty URL, given or in ``TOOLKEEPER_REGISTRY``, is
``registry.url_invalid``: it never stands for the default store.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

import platformdirs

from toolkeeper.errors import StoreError
from toolkeeper.registry.masking import masked
from toolkeeper.registry.store import RegistryStore

__all__ = ["ENV_VAR", "default_url", "masked", "open_store"]

ENV_VAR = "TOOLKEEPER_REGISTRY"


def _default_path() -> Path:
    return platformdirs.user_data_path("toolkeeper", appauthor=False) / "registry.db"


def default_url() -> str:
    """``TOOLKEEPER_REGISTRY`` if set, else the SQLite file in the user data directory."""
    from_env = os.environ.get(ENV_VAR)
    if from_env is None:
        return f"sqlite://{_default_path()}"
    if not from_env.strip():
        raise StoreError(f"{ENV_VAR} is set but empty (unset it for the default registry)",
                         code="registry.url_invalid", data={"variable": ENV_VAR})
    return from_env


def _memory(rest: str, create: bool, read_only: bool) -> RegistryStore:
    from toolkeeper.registry.memory import MemoryStore

    if rest:
        raise StoreError("memory: takes no path", code="registry.url_invalid")
    return MemoryStore()


def _sqlite(rest: str, create: bool, read_only: bool) -> RegistryStore:
    from toolkeeper.registry.sqlite import SQLiteStore

    if not rest.startswith("//") or not rest[2:]:
        raise StoreError("expected sqlite:///path/to/file.db", code="registry.url_invalid")
    path = Path(rest[2:])
    if path.exists() and not path.is_file():
        raise StoreError(f"{path} is not a file", code="registry.not_a_file",
                         data={"path": str(path)})
    if not create and not path.is_file():
        raise StoreError(f"no registry at {path}", code="registry.missing",
                         data={"path": str(path)})
    if not path.parent.is_dir():
        if path != _default_path():
            raise StoreError(f"directory {path.parent} does not exist",
                             code="registry.missing", data={"path": str(path)})
        path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteStore(path, create=create, read_only=read_only)


def _postgres(rest: str, create: bool, read_only: bool) -> RegistryStore:
    from toolkeeper.registry.postgres import PostgresStore

    return PostgresStore("postgresql:" + rest, create=create, read_only=read_only)


_SCHEMES: Mapping[str, Callable[[str, bool, bool], RegistryStore]] = MappingProxyType({
    "memory": _memory,
    "sqlite": _sqlite,
    "postgresql": _postgres,
    "postgres": _postgres,
})


def open_store(url: str | None = None, *, create: bool = True, read_only: bool = False
               ) -> RegistryStore:
    """The store a registry URL names (``None``: :func:`default_url`). ``create=False`` refuses
    to create a registry that is not there yet (``registry.missing``); ``read_only=True`` never
    writes to the store (and implies ``create=False``)."""
    if url is None:
        url = default_url()
    if not url.strip():
        raise StoreError("the registry URL is empty", code="registry.url_invalid",
                         data={"schemes": sorted(_SCHEMES)})
    scheme, sep, rest = url.partition(":")
    opener = _SCHEMES.get(scheme.lower()) if sep else None
    if opener is None:
        raise StoreError(
            f"unsupported registry URL {masked(url, url)!r} (use memory:, sqlite:///path.db or "
            "postgresql://)",
            code="registry.url_invalid", data={"schemes": sorted(_SCHEMES)})
    return opener(rest, create and not read_only, read_only)
