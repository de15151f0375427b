"""Semantic versions per semver 2.0.0: parse once, compare as values, bump.

Precedence follows semver.org section 11: major, minor, patch numerically; a pre-release sorts
before the release; pre-release identifiers compare left to right, numeric ones numerically and
below alphanumeric ones, and a shorter list sorts first when all shared identifiers are equal.
Build metadata is kept for display but ignored for precedence and equality, so ``1.0.0+a`` and
``1.0.0+b`` name the same version (a registry refuses the second as a different content).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import total_ordering
from typing import Final

from toolkeeper.errors import SemverError

__all__ = ["MAX_NUMBER_DIGITS", "Version"]

# semver.org's recommended regular expression, anchored, without leading "v".
_SEMVER = re.compile(
    r"^(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+(?P<build>[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$",
    re.ASCII,
)


MAX_NUMBER_DIGITS: Final = 4300
"""The longest numeric identifier a version may have: Python's own bound for turning digits
into an integer (so every version stored before the bound existed still parses)."""


_BEYOND: Final = 10 ** MAX_NUMBER_DIGITS


def _bumped(number: int) -> int:
    if number + 1 >= _BEYOND:
        raise SemverError(f"a version number past {MAX_NUMBER_DIGITS:,} digits cannot be made")
    return number + 1


def _pre_key(pre: tuple[str, ...]) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre)


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    """A semver 2.0.0 version. Build ``Version.parse("1.2.3-rc.1+b5")``; compare with ``<``."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)
    _order: tuple[int, int, int, int, tuple[tuple[int, int, str], ...]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Precedence as one tuple, built once: registries sort and compare versions a lot.
        # A release (no pre-release) sorts after every pre-release of the same triple.
        object.__setattr__(self, "_order", (
            self.major, self.minor, self.patch, 0 if self.prerelease else 1,
            _pre_key(self.prerelease)))

    @classmethod
    def parse(cls, text: object) -> Version:
        """Parse a version string; anything else (ranges, ``v1.0``, junk) is a SemverError."""
        if not isinstance(text, str):
            raise SemverError(f"version must be a string, got {type(text).__name__}")
        m = _SEMVER.fullmatch(text)
        if m is None:
            raise SemverError(f"{text!r} is not a semver 2.0.0 version (MAJOR.MINOR.PATCH)")
        pre = m.group("pre")
        build = m.group("build")
        if max(len(m.group("major")), len(m.group("minor")), len(m.group("patch")),
               *(len(p) for p in (pre.split(".") if pre else ()) if p.isdigit())
               ) > MAX_NUMBER_DIGITS:
            raise SemverError(f"a numeric identifier of a version has more than "
                              f"{MAX_NUMBER_DIGITS:,} digits")
        return cls(
            int(m.group("major")),
            int(m.group("minor")),
            int(m.group("patch")),
            tuple(pre.split(".")) if pre else (),
            tuple(build.split(".")) if build else (),
        )

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._order < other._order

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._order == other._order

    def __hash__(self) -> int:
        return hash(self._order)

    def bump_major(self) -> Version:
        """The next major version (a SemverError past :data:`MAX_NUMBER_DIGITS`, as each bump)."""
        return Version(_bumped(self.major), 0, 0)

    def bump_minor(self) -> Version:
        return Version(self.major, _bumped(self.minor), 0)

    def bump_patch(self) -> Version:
        # 1.2.3-rc.1 -> 1.2.3 (the release the pre-release was heading to), else 1.2.4.
        if self.prerelease:
            return Version(self.major, self.minor, self.patch)
        return Version(self.major, self.minor, _bumped(self.patch))

    def __str__(self) -> str:
        out = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            out += "-" + ".".join(self.prerelease)
        if self.build:
            out += "+" + ".".join(self.build)
        return out

    def __repr__(self) -> str:
        return f"Version({str(self)!r})"
