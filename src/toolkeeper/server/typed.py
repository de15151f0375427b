"""Contracts from type hints: a typed function becomes a tool contract and its handler.

::

    @handlers.tool("payments.lookup", version="1.0.0", title="Look up a payment",
                   data_classification="confidential", side_effect="read",
                   required_scopes=["payments.read"], tenants=[])
    async def lookup(reference: Annotated[str, Field(pattern="^PMT-")],
                     include_legs: bool = False, ctx: ToolContext | None = None) -> Payment:
        '''Status, amount and beneficiary of one payment.'''

The input schema comes from the parameters: one parameter annotated with a pydantic model is
the whole arguments object (the function receives the model instance); otherwise every
parameter is a property (the function receives keyword arguments, defaults kept). A parameter
annotated :class:`~toolkeeper.server.ToolContext`, or an unannotated one named ``ctx``, gets
the call's context. The output schema comes from the return annotation: a type whose schema
is an object is the structured content as it stands; any other type is wrapped as
``{"result": value}`` (as FastMCP does); ``str``, ``None``, ``ToolResult`` or no annotation
means no output schema (the value is a result as the untyped API takes it).

Both schemas are JSON Schema 2020-12 (pydantic's), closed to unknown properties by default
(:func:`~toolkeeper.server.closed_schemas.closed_schema`: ``additionalProperties: false`` on every
record-like object, ``$defs`` included, unless its model says otherwise, e.g. ``extra="allow"``);
``closed=False`` keeps pydantic's schemas as they are. They are normalised through canonical
JSON, so a derived contract is byte-identical across runs and processes, and it is checked by
:func:`~toolkeeper.contracts.spec.spec_from_mapping` like a contract file.

Nothing else is guessed: ``version``, ``title``, ``description`` (or a docstring),
``data_classification``, ``side_effect``, ``required_scopes`` and ``tenants`` (an empty list
is explicit: every tenant) are required, and a missing one is a ContractError
``contract.typed_metadata_missing`` at decoration time. A signature that cannot be derived is
``contract.typed_signature``; a type pydantic cannot describe is ``contract.typed_unsupported``.

Arguments reach the function after the gateway validated them against the contract; pydantic
then parses them (a string into a ``datetime``, say). A value the schema accepts but pydantic
cannot parse is the same isError result as invalid arguments, the pydantic error type as the
``keyword``. A return value is dumped by alias, the names its output schema gives (pydantic's
schemas name properties by alias); one that is not of its annotated type is the handler's
failure.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from pydantic_core import PydanticSerializationError

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.contracts.validate import Issue, format_path
from toolkeeper.errors import ContractError
from toolkeeper.server.call_outcomes import invalid_arguments_result
from toolkeeper.server.closed_schemas import closed_schema
from toolkeeper.server.content import ToolResult
from toolkeeper.server.handler_context import ToolContext

__all__ = ["METADATA", "TypedTool", "derive_tool"]

#: The decorator keywords a typed tool must give (``description`` may be its docstring).
METADATA = ("version", "title", "description", "data_classification", "side_effect",
            "required_scopes", "tenants")

_NO_OUTPUT = (str, ToolResult, type(None), None, inspect.Signature.empty)


@dataclass(frozen=True, slots=True)
class TypedTool:
    """A derived contract and the ``(arguments)`` or ``(arguments, ctx)`` function that parses
    arguments, calls the typed function and dumps its value."""

    spec: ToolSpec
    handler: Callable[..., Any]


def _fail(code: str, tool: str, message: str, **data: Any) -> ContractError:
    return ContractError(f"typed tool {tool!r}: {message}", code=code, data={"tool": tool, **data})


@dataclass(frozen=True, slots=True)
class _Inputs:
    model: type[pydantic.BaseModel]
    model_parameter: str | None
    """The one parameter that receives the whole model, or None: keyword arguments."""
    fields: tuple[tuple[str, str], ...]
    """(field name, parameter name) for keyword arguments."""
    context: str | None


def _is_context(parameter: inspect.Parameter, hint: Any) -> bool:
    if hint is inspect.Parameter.empty:
        return parameter.name == "ctx"
    return hint is ToolContext or (typing.get_origin(hint) in (typing.Union, types.UnionType)
                                   and ToolContext in typing.get_args(hint))


def _is_model(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, pydantic.BaseModel)


def _inputs(tool: str, function: Callable[..., Any], hints: Mapping[str, Any], closed: bool
            ) -> _Inputs:
    context: str | None = None
    params: list[inspect.Parameter] = []
    for parameter in inspect.signature(function).parameters.values():
        hint = hints.get(parameter.name, inspect.Parameter.empty)
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD,
                              parameter.POSITIONAL_ONLY):
            raise _fail("contract.typed_signature", tool, f"parameter {parameter.name!r}: "
                        "*args, **kwargs and positional-only parameters cannot be derived",
                        parameter=parameter.name)
        if _is_context(parameter, hint):
            context = parameter.name
        elif hint is inspect.Parameter.empty:
            raise _fail("contract.typed_signature", tool,
                        f"parameter {parameter.name!r} has no type annotation",
                        parameter=parameter.name)
        else:
            params.append(parameter)
    if len(params) == 1 and _is_model(hints[params[0].name]):
        return _Inputs(hints[params[0].name], params[0].name, (), context)
    config = pydantic.ConfigDict(extra="forbid" if closed else "ignore")
    # Fields get neutral names and the parameter name as alias: a parameter may be called
    # ``json`` or ``model_config``, which a model's own attributes would shadow.
    definitions: dict[str, Any] = {}
    for i, parameter in enumerate(params):
        default = ... if parameter.default is parameter.empty else parameter.default
        definitions[f"p{i}"] = (hints[parameter.name],
                                pydantic.Field(default, alias=parameter.name))
    model = pydantic.create_model("Arguments", __config__=config, **definitions)
    return _Inputs(model, None, tuple((f"p{i}", p.name) for i, p in enumerate(params)), context)


def _json(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as plain JSON with sorted keys: identical bytes for identical hints."""
    value: dict[str, Any] = loads_json(canonical_json(schema))
    return value


def _input_schema(inputs: _Inputs, closed: bool) -> dict[str, Any]:
    schema = dict(inputs.model.model_json_schema(mode="validation"))
    if inputs.model_parameter is None:
        schema.pop("title", None)  # the synthesised model's name says nothing
    return _json(closed_schema(schema) if closed else schema)


@dataclass(frozen=True, slots=True)
class _Output:
    adapter: pydantic.TypeAdapter[Any]
    wrap: bool
    schema: dict[str, Any]


def _output(hint: Any, closed: bool) -> _Output | None:
    if hint in _NO_OUTPUT:
        return None
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(hint)
    schema = dict(adapter.json_schema(mode="serialization"))
    wrap = schema.get("type") != "object"
    if wrap:  # {"result": value}; the definitions stay at the root, where refs point
        defs = schema.pop("$defs", None)
        schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        if defs is not None:
            schema["$defs"] = defs
    return _Output(adapter, wrap, _json(closed_schema(schema) if closed else schema))


def _issues(error: pydantic.ValidationError) -> list[Issue]:
    return sorted(Issue(format_path(e["loc"]), e["msg"], e["type"])
                  for e in error.errors(include_url=False, include_input=False))


def _caller(function: Callable[..., Any], inputs: _Inputs, output: _Output | None
            ) -> Callable[..., Any]:
    """The binding's function: ``(arguments[, ctx])``, async when ``function`` is."""
    model, single, fields, context = (inputs.model, inputs.model_parameter, inputs.fields,
                                      inputs.context)

    def parse(arguments: dict[str, Any], ctx: ToolContext | None) -> dict[str, Any]:
        try:
            parsed = model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            raise _Invalid(_issues(exc)) from None
        kwargs: dict[str, Any] = {single: parsed} if single is not None else {
            name: getattr(parsed, field) for field, name in fields}
        if context is not None:
            kwargs[context] = ctx
        return kwargs

    def dump(value: Any) -> Any:
        if output is None or isinstance(value, ToolResult):
            return value
        try:
            dumped = output.adapter.dump_python(value, mode="json", by_alias=True,
                                                warnings="error")
        except PydanticSerializationError:
            raise TypeError(f"a typed tool returned a {type(value).__name__}, not its "
                            "annotated type") from None
        return {"result": dumped} if output.wrap else dumped

    if inspect.iscoroutinefunction(function):
        async def run_async(arguments: dict[str, Any], ctx: ToolContext | None) -> Any:
            try:
                kwargs = parse(arguments, ctx)
            except _Invalid as invalid:
                return invalid_arguments_result(invalid.issues)
            return dump(await function(**kwargs))
        return run_async

    def run(arguments: dict[str, Any], ctx: ToolContext | None) -> Any:
        try:
            kwargs = parse(arguments, ctx)
        except _Invalid as invalid:
            return invalid_arguments_result(invalid.issues)
        return dump(function(**kwargs))

    if context is not None:
        return run
    return lambda arguments: run(arguments, None)  # one parameter: bound inline, no context


class _Invalid(Exception):
    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues


def _missing(metadata: Mapping[str, Any]) -> list[str]:
    return [key for key in METADATA if metadata.get(key) is None]


def _value(value: Any) -> Any:
    return getattr(value, "value", value)  # an enum member or its wire value


def _strings(tool: str, key: str, value: Any) -> list[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence | frozenset | set):
        raise _fail("contract.type", tool, f"{key} must be a list of strings", key=key)
    return list(value)


def derive_tool(function: Callable[..., Any], name: str, *, closed: bool = True,
                **metadata: Any) -> TypedTool:
    """The contract and handler of ``function`` as tool ``name`` (see the module docstring);
    ``metadata`` holds the :data:`METADATA` keywords."""
    if metadata.get("description") is None:
        metadata["description"] = inspect.getdoc(function)
    missing = _missing(metadata)
    if missing:
        raise _fail("contract.typed_metadata_missing", name,
                    f"the decorator must give {', '.join(missing)} (never guessed)",
                    missing=missing)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
        inputs = _inputs(name, function, hints, closed)
        output = _output(hints.get("return", inspect.Signature.empty), closed)
        input_schema = _input_schema(inputs, closed)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticInvalidForJsonSchema,
            pydantic.PydanticUserError, NameError, TypeError) as exc:
        raise _fail("contract.typed_unsupported", name,
                    f"its type hints cannot be described as JSON Schema: {exc}") from None
    contract: dict[str, Any] = {
        "name": name, "version": str(metadata["version"]), "title": metadata["title"],
        "description": metadata["description"], "inputSchema": input_schema,
        "dataClassification": _value(metadata["data_classification"]),
        "sideEffect": _value(metadata["side_effect"]),
        "requiredScopes": _strings(name, "required_scopes", metadata["required_scopes"]),
        "tenants": _strings(name, "tenants", metadata["tenants"]),
    }
    if output is not None:
        contract["outputSchema"] = output.schema
    return TypedTool(spec_from_mapping(contract), _caller(function, inputs, output))
