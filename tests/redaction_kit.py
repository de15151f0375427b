"""The redaction corpus (tests/contracts/redaction_corpus.json): secret kinds, each with two
secrets of the same shape, shared by the redaction unit tests, the call log digest tests and
the server log tests. A case is key-borne (``key``: the secret is an argument's value under a
denied key) or value-borne (``text``: the secret sits inside a string, where ``{secret}``
is). A value-borne case is of kind ``value`` when the secret has a shape :func:`redact` masks
in any string (so the call log's digest tests read it too), or of kind ``text`` when only log
text redaction finds it, by the name before it (a header pair written as a tuple). Add a kind
by adding an entry: every test that reads the corpus covers it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["CORPUS", "Case", "leaks", "render"]

_PATH = Path(__file__).parent / "contracts" / "redaction_corpus.json"
_WINDOW = 8
"""A leak is any run of this many characters of a secret found in the output."""


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    secrets: tuple[str, str]
    key: str | None = None
    text: str | None = None

    def arguments(self, which: int = 0) -> dict[str, Any]:
        """Tool arguments carrying the secret: under the key, or in a ``note``."""
        secret = self.secrets[which]
        if self.key is not None:
            return {self.key: secret}
        assert self.text is not None
        return {"note": self.text.replace("{secret}", secret)}


CORPUS: tuple[Case, ...] = tuple(
    Case(name=c["name"], kind=c["kind"], secrets=tuple(c["secrets"]), key=c.get("key"),
         text=c.get("text"))
    for c in json.loads(_PATH.read_text()))


def render(arguments: dict[str, Any]) -> str:
    """How a careless handler puts its arguments into an exception message: as a repr, as
    JSON, as ``key=value`` pairs and as ``Key: value`` header lines."""
    pairs = " ".join(f"{k}={v}" for k, v in arguments.items())
    headers = "\n".join(f"{k}: {v}" for k, v in arguments.items())
    return f"rejected {arguments!r}; json {json.dumps(arguments)}; pairs {pairs}\n{headers}"


def leaks(output: str, case: Case) -> list[str]:
    """The pieces of ``case``'s first secret (any window of 8 characters, also URL-encoded)
    that appear in ``output``."""
    secret = case.secrets[0]
    windows = {secret[i:i + _WINDOW] for i in range(max(1, len(secret) - _WINDOW + 1))}
    windows |= {quote(secret, safe=""), quote_plus(secret)}
    return sorted(w for w in windows if w in output)
