"""Redaction (SPEC 5.6): the one place everything goes through before it writes. :func:`redact`
for a JSON value about to be serialized, hashed or stored (the call log's arguments digest);
:func:`redact_text` for text about to be logged. Both apply the rules of
:mod:`toolkeeper.contracts.redaction_rules`: denied keys have their whole value replaced,
secret shapes are masked wherever they appear inside a string.

Text has no keys, so :func:`redact_text` also finds them: a denied name followed by ``=`` or
``:`` (``password=...``, ``'db_password': '...'``, ``"token": "..."``, ``Authorization: Basic
...``, ``"api key": ...``, a header pair ``(b'x-api-key', b'...')``) has its value masked; and
every value of a URL's query string is masked (an access log line keeps its path, not
``?access_token=...``). Like the shapes' searches, it takes time linear in the text: only a
denied name's value is read.

Personal data is not a secret, but an operator may not want it in evidence or logs: the
:class:`PersonalDataPolicy` (``logging.personal_data`` and ``logging.personal_keys`` in the
gateway's configuration; :func:`set_personal_data_policy` for a library caller) names keys
(``query``, ``email``, ... compared in canonical form) whose values are kept (the default),
hashed (``[HASHED sha256:<16 hex>]`` of the value's canonical JSON: equal values stay
recognisably equal, the text is gone; a low-entropy value such as an email can still be
guessed from its hash) or masked (``[PERSONAL]``), by :func:`redact` and :func:`redact_text`
alike, so evidence, log lines and the call log's digest follow one policy.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.redaction_rules import (
    ANY_SHAPE,
    DENYLIST,
    REDACTED,
    SHAPES,
    Shape,
    canonical_key,
    denied_key,
    mask_match,
)

__all__ = ["DENYLIST", "PERSONAL", "PERSONAL_KEYS", "PERSONAL_MODES", "REDACTED",
           "PersonalDataPolicy", "Redaction", "canonical_key", "denied_key",
           "personal_data_policy", "redact", "redact_text", "set_personal_data_policy"]

PERSONAL: Final = "[PERSONAL]"
"""What a personal value becomes under the ``mask`` policy."""
PERSONAL_MODES: Final = ("keep", "hash", "mask")
PERSONAL_KEYS: Final = ("query", "email", "phone", "address", "full_name")
"""The default personal-data keys (what a person typed or who they are)."""


@dataclass(frozen=True, slots=True)
class PersonalDataPolicy:
    """What :func:`redact` and :func:`redact_text` do with the values of ``keys`` (canonical
    forms): ``keep`` them, ``hash`` them or ``mask`` them."""

    mode: str = "keep"
    keys: frozenset[str] = frozenset(canonical_key(k) for k in PERSONAL_KEYS)


_policy = PersonalDataPolicy()


def personal_data_policy() -> PersonalDataPolicy:
    """The policy in force in this process."""
    return _policy


def set_personal_data_policy(mode: str, keys: tuple[str, ...] | list[str] = PERSONAL_KEYS
                             ) -> PersonalDataPolicy:
    """Put a policy in force for the process (a ``ValueError`` for an unknown mode); the
    previous one is returned, so a caller can restore it."""
    global _policy
    if mode not in PERSONAL_MODES:
        raise ValueError(f"personal-data mode must be one of {PERSONAL_MODES}")
    previous = _policy
    _policy = PersonalDataPolicy(mode, frozenset(canonical_key(k) for k in keys))
    return previous


def _personal_key(key: object) -> bool:
    return isinstance(key, str) and canonical_key(key) in _policy.keys


def _personal_value(value: Any) -> str:
    if _policy.mode == "mask":
        return PERSONAL
    try:
        digest = hashlib.sha256(canonical_json(value)).hexdigest()
    except (ValueError, TypeError):  # not a JSON value (a non-finite float): masked instead
        return PERSONAL
    return f"[HASHED sha256:{digest[:16]}]"


_PERSONAL_RULES: Final = {"hash": "key.personal_hash", "mask": "key.personal_mask"}

_KEYS: dict[object, bool] = {}
"""Whether a key (as written) is denied: a bounded memo, argument names repeat."""
_KEYS_MAX: Final = 4096


class Redaction(tuple[str, str]):
    """Evidence of one redaction: ``(path, rule)``; ``rule`` is ``key.denylist`` or the value
    shape (``value.jwt``, ...)."""

    __slots__ = ()


def _denied(key: object) -> bool:
    if not isinstance(key, str):
        return False
    denied = denied_key(key)
    if len(_KEYS) < _KEYS_MAX and len(key) <= 128:
        _KEYS[key] = denied
    return denied


def _mask_shape(shape: Shape, text: str) -> str:
    """``text`` with ``shape``'s matches (those its check accepts) masked; the same object
    when none was."""
    masked = False

    def replace(match: re.Match[str]) -> str:
        nonlocal masked
        if shape.check is not None and not shape.check(match):
            return match.group()
        masked = True
        return mask_match(match)

    new = shape.pattern.sub(replace, text)
    return new if masked else text


def _mask_shapes(text: str) -> tuple[str, list[str]]:
    """``text`` with every secret shape masked (the same object when none was), and the rules
    that fired, each once."""
    fired: list[str] = []
    for shape in SHAPES:
        if shape.pattern.search(text) is not None:
            new = _mask_shape(shape, text)
            if new is not text:
                text = new
                if shape.rule not in fired:
                    fired.append(shape.rule)
    return text, fired


def _mask(text: str, path: str, evidence: list[Redaction]) -> str:
    text, fired = _mask_shapes(text)
    evidence.extend(Redaction((path, rule)) for rule in fired)
    return text


_search: Final = ANY_SHAPE.search


def _walk(value: Any, path: str, evidence: list[Redaction]) -> Any:
    """``value`` redacted; the very same object when nothing in it was (the common case costs
    one dictionary lookup per key and one search per string)."""
    if isinstance(value, dict):  # first: the arguments of every call are one
        out: dict[Any, Any] | None = None
        personal = _policy.mode != "keep"
        for key, item in value.items():
            denied = _KEYS.get(key)  # inline: the memo answers for almost every key
            if denied is None:
                denied = _denied(key)
            if denied:
                new: Any = REDACTED
                evidence.append(Redaction((f"{path}.{key}", "key.denylist")))
            elif personal and _personal_key(key):
                new = _personal_value(item)
                evidence.append(Redaction((f"{path}.{key}", _PERSONAL_RULES[_policy.mode])))
            elif type(item) is str:
                new = item if _search(item) is None else _mask(item, f"{path}.{key}", evidence)
            elif isinstance(item, str | dict | list):
                new = _walk(item, f"{path}.{key}", evidence)
            else:
                new = item
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, list):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new = _walk(item, f"{path}[{index}]", evidence) if isinstance(
                item, str | dict | list) else item
            if new is not item:
                if items is None:
                    items = list(value)
                items[index] = new
        return value if items is None else items
    if isinstance(value, str):
        return value if _search(value) is None else _mask(value, path, evidence)
    return value


def redact(value: Any) -> tuple[Any, list[Redaction]]:
    """``value`` (a JSON value) with denied keys' values and secret-shaped text replaced by
    :data:`REDACTED`, and the evidence in the order found. The input is not changed (the same
    object comes back when there was nothing to redact)."""
    evidence: list[Redaction] = []
    return _walk(value, "$", evidence), evidence


_SCHEMES: Final = "basic|bearer|digest|token|bot|negotiate|ntlm|apikey|aws4-hmac-sha256"
_NAME: Final = re.compile(
    r"(?:(?<=[(\[])[ \t]*+[bB]?(?P<tq>['\"])(?P<tuple>[A-Za-z_][\w .-]{0,63})(?P=tq)[ \t]*+,"
    r"|[bB]?(?P<q>['\"])(?P<quoted>[A-Za-z_][\w .-]{0,63})(?P=q)[ \t]*+[:=]"
    r"|(?<![\w.-])(?P<bare>[A-Za-z_][\w.-]*+(?:[ ][A-Za-z_][\w.-]*+)?)['\"]?[ \t]*+[:=]"
    r")[ \t]*+")
"""A name a value follows, in text: ``('name', value)`` (a header pair), ``'name': value``
(quoted, perhaps with spaces: ``"api key": ...``), ``name=value`` or ``name: value`` (one word,
or two: ``api key: ...``)."""
_RUN: Final = "(?:" + re.escape(REDACTED) + r"|[^\s,;&)}\]'\"<>])++"
"""A bare value: up to a space, a separator or a closing bracket, taking a value masked
already (``Bearer [REDACTED]``) whole."""
_PARAMETER: Final = r"[\w-]++[ \t]*+=[ \t]*+(?:\"(?:[^\"\\\n]|\\.)*+\"?|[^\s,\"]++)"
_VALUE: Final = re.compile(
    r"[bB]?'(?P<single>(?:[^'\\\n]|\\.)*+)'?"
    r"|[bB]?\"(?P<double>(?:[^\"\\\n]|\\.)*+)\"?"
    r"|[\[({][^\])}\n]*+[\])}]?"  # a container's repr, to its first closing bracket
    rf"|(?i:{_SCHEMES})[ \t]++(?>{_PARAMETER}(?:[ \t]*+,[ \t]*+{_PARAMETER})*+|{_RUN})"
    rf"|{_RUN}(?:[ \t]*+;[ \t]*+{_RUN})*+")
"""A value: quoted (to the closing quote, else the end of the line), bracketed, an auth scheme
and its credentials (``Digest username="ada", response="..."``: every parameter), or a bare
run (with ``; k=v`` cookie continuations)."""
_QUERY: Final = re.compile(r"(?<=[\w/.~%-])\?(?P<query>[^\s#\"'<>]+)")
_QUERY_VALUE: Final = re.compile(r"(?P<name>[^&;=]+)(?P<value>=[^&;]*)?")


def _denied_name(match: re.Match[str]) -> bool:
    """Whether the name ``match`` found is denied: two bare words as one (``api key``) or the
    last of them alone (``page token``: ``token``)."""
    name = match.group("tuple") or match.group("quoted") or match.group("bare")
    return _is_denied(name) or (match.group("bare") is not None and " " in name
                                and _is_denied(name.rpartition(" ")[2]))


def _personal_name(match: re.Match[str]) -> bool:
    """Whether the name ``match`` found is a personal-data key, as :func:`_denied_name`
    judges two bare words (``search query``: ``query``)."""
    name = match.group("tuple") or match.group("quoted") or match.group("bare")
    return _personal_key(name) or (match.group("bare") is not None and " " in name
                                   and _personal_key(name.rpartition(" ")[2]))


def _is_denied(name: str) -> bool:
    denied = _KEYS.get(name)
    return _denied(name) if denied is None else denied


def _mask_named_values(text: str) -> str:
    """``text`` with the value after every denied name masked. Only a denied name's value is
    read, and a value masked is passed over, so each character is read a bounded number of
    times: the value is not in the name's search (there, a run read for every name would make
    ``a=a=a=...`` quadratic)."""
    parts: list[str] = []
    done = 0
    personal = _policy.mode != "keep"
    for match in _NAME.finditer(text):
        if match.start() < done:
            continue
        denied = _denied_name(match)
        if not denied and not (personal and _personal_name(match)):
            continue
        value = _VALUE.match(text, match.end())
        if value is None:
            continue
        start, end = value.span(next(
            (g for g in ("single", "double") if value.group(g) is not None), 0))
        parts += (text[done:start], REDACTED if denied else _personal_value(text[start:end]))
        done = end
    return "".join((*parts, text[done:])) if parts else text


def _query_value(match: re.Match[str]) -> str:
    """``name=value`` keeps its name; a bare ``?item`` may itself be the secret."""
    return REDACTED if match.group("value") is None else f"{match.group('name')}={REDACTED}"


def _query(match: re.Match[str]) -> str:
    return "?" + _QUERY_VALUE.sub(_query_value, match.group("query"))


def redact_text(text: str) -> str:
    """``text`` (a log line, an exception's message or traceback) with secret shapes, the
    values of denied names and every query string value masked."""
    text, _ = _mask_shapes(text)
    text = _mask_named_values(text)
    return _QUERY.sub(_query, text)
