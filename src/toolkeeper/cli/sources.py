"""Reading the bytes of a document the CLI was given: a file, or standard input (``-``).

Every read is bounded: at most :data:`MAX_DOCUMENT_BYTES` + 1 bytes are read, so a document
over the cap (or an endless one, such as ``/dev/zero``) is refused at once as
``file.too_large`` instead of being read whole. The text must be UTF-8 (JSON is UTF-8 by RFC
8259; YAML's UTF-16 forms are not accepted either): a byte sequence that is not is refused as
``file.not_utf8`` with the offset of its first byte in ``data.offset``. A file that cannot be
opened or read (missing, a directory, no permission) is ``file.unreadable``. Every error names
the file (``-`` for standard input).
"""

from __future__ import annotations

import sys
from typing import Final

from toolkeeper.errors import ContractError

__all__ = ["MAX_DOCUMENT_BYTES", "STDIN", "read_source"]

MAX_DOCUMENT_BYTES: Final = 4 * 1024 * 1024
"""The largest document the CLI reads (4 MiB): a contract, a schema or arguments. The largest
example contract is a few kilobytes; a megabyte of schema is already far past what a gateway
would list."""

STDIN: Final = "-"


def _read(source: str) -> bytes:
    try:
        if source == STDIN:
            stdin = sys.stdin
            if stdin is None:  # started with descriptor 0 closed
                raise OSError(9, "standard input is closed")
            return stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
        with open(source, "rb") as file:
            return file.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise ContractError(f"cannot read {source}: {exc.strerror or exc}",
                            code="file.unreadable") from None


def read_source(source: str) -> bytes:
    """The bytes of a file or of standard input (``-``): UTF-8 text of at most
    :data:`MAX_DOCUMENT_BYTES` bytes, else a ContractError naming ``source``."""
    raw = _read(source)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ContractError(f"{source}: larger than {MAX_DOCUMENT_BYTES} bytes",
                            code="file.too_large", data={"maxBytes": MAX_DOCUMENT_BYTES})
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractError(f"{source}: not UTF-8 text (byte {exc.start}: 0x{raw[exc.start]:02x})",
                            code="file.not_utf8", data={"offset": exc.start}) from None
    return raw
