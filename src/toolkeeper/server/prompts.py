"""Prompts bound to handlers: what ``prompts/list`` lists and ``prompts/get`` renders.

::

    @handlers.prompt("review", description="Review a change",
                     arguments=[PromptArgument("diff", "The change", required=True)])
    def review(arguments, ctx):
        return f"Review this change:\\n{arguments['diff']}"

Prompts are served, not governed: unlike tools they have no contract, no version, no
classification and no tenant scoping. Every caller that may reach the gateway lists the same
prompts, and a prompt is changed by changing its handler. Prompts are bound before the gateway
is built (:func:`~toolkeeper.server.gateway.build_gateway` reads them once: the ``prompts``
capability is advertised only when at least one is bound).

A prompt handler takes ``(arguments)`` or ``(arguments, ctx)`` (``arguments``: a dict of
strings) and returns its messages (:func:`to_prompt_messages`): a string (one user text
message), a content block (one user message carrying it: the builders of
:mod:`~toolkeeper.server.content`), a prompt message (:func:`prompt_message`), or a list of
those. Through its context it asks the caller back like a tool handler
(:mod:`toolkeeper.server.asking`; serving: :mod:`toolkeeper.server.prompt_methods`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.server.content import check_content, text

__all__ = [
    "PromptArgument",
    "PromptBinding",
    "Prompts",
    "prompt_message",
    "to_prompt_messages",
]

ROLES: Final = frozenset({"user", "assistant"})
"""The roles of a ``PromptMessage`` (both eras)."""


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument a prompt accepts (its values are strings on the wire)."""

    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None

    @classmethod
    def from_value(cls, value: PromptArgument | Mapping[str, Any] | str) -> PromptArgument:
        """An argument given as itself, as its wire mapping (``name``, ``description``,
        ``required``, ``title``) or as a bare name (a required argument)."""
        if isinstance(value, PromptArgument):
            return value
        if isinstance(value, str):
            return cls(value, required=True)
        name = value.get("name") if isinstance(value, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"a prompt argument needs a name: {value!r}")
        return cls(name, value.get("description"), bool(value.get("required")),
                   value.get("title"))

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "required": self.required}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class PromptBinding:
    """A function bound to a prompt name."""

    name: str
    description: str
    arguments: tuple[PromptArgument, ...]
    function: Callable[..., Any]
    takes_context: bool = True
    title: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The ``Prompt`` that ``prompts/list`` lists."""
        out: dict[str, Any] = {"name": self.name, "description": self.description,
                               "arguments": [a.to_wire() for a in self.arguments]}
        if self.title is not None:
            out["title"] = self.title
        return out


class Prompts:
    """The prompts of a handler set, by name."""

    def __init__(self) -> None:
        self._by_name: dict[str, PromptBinding] = {}

    def bind(self, name: str, function: Callable[..., Any], *, description: str,
             arguments: Iterable[PromptArgument | Mapping[str, Any] | str] = (),
             title: str | None = None, takes_context: bool = True) -> PromptBinding:
        """Bind ``function`` to the prompt ``name`` (ValueError: a name bound twice, an
        argument declared twice, or a prompt without a description, which clients show)."""
        if not isinstance(name, str) or not name:
            raise ValueError("a prompt needs a name")
        if not isinstance(description, str) or not description:
            raise ValueError(f"prompt {name!r} needs a description")
        if name in self._by_name:
            raise ValueError(f"a prompt is already bound to {name!r}")
        declared = tuple(PromptArgument.from_value(a) for a in arguments)
        names = [a.name for a in declared]
        if len(set(names)) != len(names):
            raise ValueError(f"prompt {name!r} declares an argument twice: {names}")
        binding = PromptBinding(name, description, declared, function, takes_context, title)
        self._by_name[name] = binding
        return binding

    def add(self, binding: PromptBinding) -> None:
        """Add a binding made elsewhere (ValueError: the name is bound already)."""
        if binding.name in self._by_name:
            raise ValueError(f"a prompt is already bound to {binding.name!r}")
        self._by_name[binding.name] = binding

    def lookup(self, name: str) -> PromptBinding | None:
        return self._by_name.get(name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[PromptBinding]:
        """The bindings in name order (the order ``prompts/list`` lists them in)."""
        return iter(sorted(self._by_name.values(), key=lambda b: b.name))


def prompt_message(content: Mapping[str, Any] | str, role: str = "user") -> dict[str, Any]:
    """A ``PromptMessage``: ``role`` (``user`` or ``assistant``) and one content block (a
    string is a text block)."""
    if role not in ROLES:
        raise ValueError(f"a prompt message's role is user or assistant, not {role!r}")
    block = text(content) if isinstance(content, str) else dict(content)
    check_content([block])
    return {"role": role, "content": block}


def _message(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return prompt_message(value)
    if isinstance(value, Mapping):
        if "role" in value:
            if set(value) - {"role", "content", "_meta"} or not isinstance(
                    value.get("content"), Mapping | str):
                raise TypeError("a prompt message has a role and one content block")
            out = prompt_message(value["content"], value["role"])
            if "_meta" in value:
                out["_meta"] = value["_meta"]
            return out
        return prompt_message(value)
    raise TypeError(f"a prompt handler returned a {type(value).__name__} among its messages")


def to_prompt_messages(value: object) -> list[dict[str, Any]]:
    """A prompt handler's return value as ``GetPromptResult.messages`` (see the module
    docstring); anything else is a TypeError, a block a client could not parse a ValueError
    (both the handler's failure)."""
    if isinstance(value, str | Mapping):
        return [_message(value)]
    if isinstance(value, list | tuple):
        return [_message(item) for item in value]
    raise TypeError(f"a prompt handler returned an unsupported value of type "
                    f"{type(value).__name__}")
