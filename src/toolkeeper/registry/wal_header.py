"""The WAL index header of a SQLite database, read from its ``-shm`` file: while it reads the
same, no connection of any process has committed (SQLite rewrites it on every commit), so a
reader can skip asking ``PRAGMA data_version``.

The file is opened once, read-only, and its first page mapped (``mmap``), so a check is a
memory comparison rather than a system call. SQLite maps the same file; it truncates it only
when a first connection opens the database, never while another (the store's own) is open,
and a last connection removes it rather than truncating it, so the mapping cannot fault.
Until the file is long enough to map, the header is read with ``pread``.

The descriptor and the map are shared by every store of the process on the same file, and
closed with the last of them: POSIX drops every lock a process holds on a file when *any* of
its descriptors of that file is closed, so closing a second descriptor of ``-shm`` would drop
the shared-memory lock of the SQLite connections still open on it (and let another process's
first connection truncate the file under them).
"""

from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path
from typing import Final

__all__ = ["WAL_HEADER_BYTES", "WalIndexHeader"]

WAL_HEADER_BYTES: Final = 48
"""The first copy of the WAL index header, which holds the change counter."""


class _Shared:
    """One ``-shm`` file open in this process: its descriptor, its map once made, its users."""

    __slots__ = ("fd", "key", "users", "view")

    def __init__(self, fd: int, key: tuple[int, int]) -> None:
        self.fd = fd
        self.key = key
        self.users = 0
        self.view: mmap.mmap | None = None


_SHARED: dict[tuple[int, int], _Shared] = {}
"""The open ``-shm`` files of this process, by (device, inode)."""
_SHARED_LOCK = threading.Lock()


def _acquire(path: str) -> _Shared | None:
    try:  # found by the file's identity before any descriptor is opened (see the docstring)
        status = os.stat(path)
    except OSError:
        return None
    key = (status.st_dev, status.st_ino)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                return None
            shared = _SHARED[key] = _Shared(fd, key)
        shared.users += 1
        return shared


def _map(shared: _Shared) -> None:
    with _SHARED_LOCK:
        if shared.view is None:
            try:  # refused (ValueError) while the file is shorter than what is mapped
                shared.view = mmap.mmap(shared.fd, WAL_HEADER_BYTES, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                shared.view = None


def _release(shared: _Shared) -> None:
    with _SHARED_LOCK:
        shared.users -= 1
        if shared.users:
            return
        del _SHARED[shared.key]
        if shared.view is not None:
            shared.view.close()
        os.close(shared.fd)


class WalIndexHeader:
    """The header of the database at ``path`` (its ``-shm`` file beside it)."""

    def __init__(self, path: Path) -> None:
        self._path = f"{path}-shm"
        self._shared: _Shared | None = None

    def read(self) -> bytes:
        """The header as it reads now; b"" when unknown (no ``-shm`` file, or a short one)."""
        shared = self._shared
        if shared is None:
            shared = self._shared = _acquire(self._path)
            if shared is None:
                return b""
        try:
            header = os.pread(shared.fd, WAL_HEADER_BYTES, 0)
        except OSError:
            return b""
        if len(header) != WAL_HEADER_BYTES:
            return b""
        if shared.view is None:
            _map(shared)
        return header

    def unchanged(self, header: bytes) -> bool:
        """Whether the header still reads ``header`` (one :meth:`read` returned)."""
        shared = self._shared
        if shared is None:
            return False
        view = shared.view
        if view is not None:
            return view[:WAL_HEADER_BYTES] == header
        try:
            return os.pread(shared.fd, WAL_HEADER_BYTES, 0) == header
        except OSError:
            return False

    def close(self) -> None:
        shared, self._shared = self._shared, None
        if shared is not None:
            _release(shared)
