"""The WAL index header of a SQLite database, read from its ``-shm`` file: while it reads the
same, no connection of any process has committed (SQLite rewrites it on every commit), so a
reader can skip asking ``PRAGMA data_version``.

The file is opened once, read-only, and its first page mapped (``mmap``), so a check is a
memory comparison rather than a system call. SQLite maps the same file; it truncates it only
when a first connection opens the database, never while another (the store's own) is open,
and a last connection removes it rather than truncating it, so the mapping cannot fault.
Until the file is long enough to map, the header is read with ``pread``.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Final

__all__ = ["WAL_HEADER_BYTES", "WalIndexHeader"]

WAL_HEADER_BYTES: Final = 48
"""The first copy of the WAL index header, which holds the change counter."""


class WalIndexHeader:
    """The header of the database at ``path`` (its ``-shm`` file beside it)."""

    def __init__(self, path: Path) -> None:
        self._path = f"{path}-shm"
        self._fd: int | None = None
        self._view: mmap.mmap | None = None

    def read(self) -> bytes:
        """The header as it reads now; b"" when unknown (no ``-shm`` file, or a short one)."""
        if self._fd is None:
            try:
                self._fd = os.open(self._path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                return b""
        try:
            header = os.pread(self._fd, WAL_HEADER_BYTES, 0)
        except OSError:
            return b""
        if len(header) != WAL_HEADER_BYTES:
            return b""
        if self._view is None:
            try:  # refused (ValueError) while the file is shorter than what is mapped
                self._view = mmap.mmap(self._fd, WAL_HEADER_BYTES, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                self._view = None
        return header

    def unchanged(self, header: bytes) -> bool:
        """Whether the header still reads ``header`` (one :meth:`read` returned)."""
        view = self._view
        if view is not None:
            return view[:WAL_HEADER_BYTES] == header
        try:
            return self._fd is not None and os.pread(self._fd, WAL_HEADER_BYTES, 0) == header
        except OSError:
            return False

    def close(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
