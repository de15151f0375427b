"""Loading transcripts: the built-in corpus (package data) or a directory of them."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from toolkeeper.conformance.transcript import Transcript, parse_transcript
from toolkeeper.errors import ConformanceError

__all__ = ["builtin_corpus", "load_directory"]


def builtin_corpus() -> list[Transcript]:
    """Every transcript shipped in ``toolkeeper/conformance/transcripts/``, by name."""
    folder = resources.files("toolkeeper.conformance").joinpath("transcripts")
    return sorted((parse_transcript(entry.read_bytes(), entry.name.removesuffix(".json"))
                   for entry in folder.iterdir() if entry.name.endswith(".json")),
                  key=lambda t: t.name)


def load_directory(directory: Path) -> list[Transcript]:
    """Every ``*.json`` transcript in ``directory`` (an estate-specific, opt-in set)."""
    if not directory.is_dir():
        raise ConformanceError(f"not a directory: {directory}", code="conformance.no_transcripts",
                               data={"directory": str(directory)})
    found = sorted(directory.glob("*.json"))
    if not found:
        raise ConformanceError(f"no transcripts in {directory}", code="conformance.no_transcripts",
                               data={"directory": str(directory)})
    return [parse_transcript(_read(path), path.stem) for path in found]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:  # a directory named *.json, a file that cannot be read
        raise ConformanceError(f"transcript {path.stem} cannot be read "
                               f"({type(exc).__name__})", code="conformance.transcript_unreadable",
                               data={"transcript": path.stem, "error": type(exc).__name__}
                               ) from None
