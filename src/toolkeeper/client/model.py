"""The model's one corrective turn (SPEC 4): the turn as a value, its prompt, and the model.

When local validation and the repair pass (SPEC 1.3) leave errors, the kernel gives the model
exactly one turn: the contract it listed, the arguments as repaired, and every remaining error,
sorted by (path, message). :class:`Model` is the whole interface an agent framework implements
(one coroutine, turn in, new arguments out); adapters for real LLM SDKs are optional extras
and nothing here needs one.

The prompt is a pure function of the turn: a fixed instruction, then the descriptor, the
arguments and the errors as canonical JSON (sorted keys, compact, exact integers), so identical
inputs give byte-identical prompts in every run and every process (a test asserts both). The
model's answer is data: a decoded JSON value, or text holding one JSON object
(:func:`read_answer`); the kernel validates it before anything is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.validate import Issue
from toolkeeper.errors import ClientError, ContractError

__all__ = [
    "INSTRUCTION", "Model", "ModelTurn", "ScriptedModel", "as_model", "read_answer", "render_prompt",
]

INSTRUCTION = (
    "The arguments below were refused by the contract of the MCP tool named in it. "
    "Answer with exactly one JSON object: the corrected arguments for this call, and nothing "
    "else. Fix every listed error; keep every value that is not in error; never invent a value "
    "the caller did not give unless the contract's schema fixes it."
)
"""The fixed first part of every prompt. Changing it changes every prompt: a reviewed diff."""


def _text(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def render_prompt(tool: Mapping[str, Any], arguments: Any, errors: Iterable[Issue]) -> str:
    """The prompt of one turn: the instruction, then the contract (the listed descriptor), the
    arguments and the errors (sorted again here, whatever order they came in), each as
    canonical JSON under a fixed heading."""
    listed = [issue.to_dict() for issue in sorted(errors)]
    return (f"{INSTRUCTION}\n\n"
            f"Contract:\n{_text(dict(tool))}\n\n"
            f"Arguments:\n{_text(arguments)}\n\n"
            f"Errors (sorted by path, then message):\n{_text(listed)}\n")


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One corrective turn: the listed descriptor, the arguments after repair, and every
    remaining error, sorted."""

    tool: Mapping[str, Any]
    arguments: Any
    errors: tuple[Issue, ...]

    @property
    def name(self) -> str:
        name = self.tool.get("name")
        return name if isinstance(name, str) else ""

    @property
    def prompt(self) -> str:
        return render_prompt(self.tool, self.arguments, self.errors)


@runtime_checkable
class Model(Protocol):
    """What the kernel needs of a model: one turn in, the corrected arguments out (a decoded
    JSON value, or text holding one JSON object)."""

    async def correct(self, turn: ModelTurn) -> Any:
        ...


def read_answer(answer: Any) -> Any:
    """The arguments a model answered: text is decoded as JSON (surrounding whitespace and a
    Markdown code fence allowed), anything else is taken as the decoded value. Text that is not
    JSON is a :class:`~toolkeeper.errors.ClientError` (``client.model_answer``)."""
    if not isinstance(answer, str):
        return answer
    text = answer.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        return loads_json(text)
    except ContractError:
        raise ClientError("the model's answer is not a JSON value",
                          code="client.model_answer") from None


Answer = Any | Callable[[ModelTurn], Any]


@dataclass
class ScriptedModel:
    """A model for tests and examples: answers from a script, in order, and records every turn
    it was given. An answer is a value, or a callable taking the turn. Running out of answers
    is a :class:`~toolkeeper.errors.ClientError` (``client.model_exhausted``)."""

    answers: Sequence[Answer] = ()
    turns: list[ModelTurn] = field(default_factory=list)

    async def correct(self, turn: ModelTurn) -> Any:
        index = len(self.turns)
        self.turns.append(turn)
        if index >= len(self.answers):
            raise ClientError("the scripted model has no answer left",
                              code="client.model_exhausted")
        answer = self.answers[index]
        return answer(turn) if callable(answer) else answer


def as_model(correct: Callable[[ModelTurn], Awaitable[Any]]) -> Model:
    """A :class:`Model` from a bare coroutine function (for frameworks that pass callables)."""

    class _Wrapped:
        async def correct(self, turn: ModelTurn) -> Any:
            return await correct(turn)

    return _Wrapped()
