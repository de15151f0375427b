"""A registry URL's password kept out of what is shown: the one masking every store's error
messages use (SPEC 5.6)."""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

__all__ = ["masked", "shown_url"]

_USERINFO: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#@]*)@")
_QUERY_PASSWORD: Final = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def masked(text: str, url: str) -> str:
    """``text`` with the password of ``url``'s userinfo (as written and percent-decoded)
    replaced by ``***``: what an error message about that URL may show (SPEC 5.6)."""
    match = _USERINFO.match(url)
    if match is None or ":" not in match.group(1):
        return text
    password = match.group(1).partition(":")[2]
    for form in sorted({password, unquote(password)}, key=len, reverse=True):
        if form:
            text = text.replace(form, "***")
    return text


def shown_url(url: str) -> str:
    """``url`` as it may be printed: its userinfo password (:func:`masked`) and a libpq
    ``password=`` query parameter replaced by ``***``."""
    return _QUERY_PASSWORD.sub(r"\1***", masked(url, url))
