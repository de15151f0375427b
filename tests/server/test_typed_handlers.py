"""Typed handlers: ``@handlers.tool`` with contract metadata derives the contract from the
function's hints (every supported annotation shape, closed by default, metadata required,
deterministic) and the bound handler receives parsed arguments."""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from datetime import datetime
from typing import Annotated, Any, Literal, TypedDict

import pytest
from gateway_kit import USER, Driver, gateway_for
from pydantic import BaseModel, ConfigDict, Field

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.errors import ContractError
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import ToolContext, ToolHandlers, ToolResult

META: dict[str, Any] = {"version": "1.0.0", "title": "T", "description": "D.",
                        "data_classification": "internal", "side_effect": "read",
                        "required_scopes": [], "tenants": []}


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Leg(BaseModel):
    number: int
    note: str | None = None


class Lookup(BaseModel):
    reference: Annotated[str, Field(pattern="^PMT-")]
    legs: list[Leg] = []


class Payment(BaseModel):
    reference: str
    legs: int


class OpenModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


def _spec(function: Any, **meta: Any) -> ToolSpec:
    handlers = ToolHandlers()
    handlers.tool("t", **{**META, **meta})(function)
    [spec] = handlers.contracts()
    return spec


def _drive(handlers: ToolHandlers, principal: Principal | None = None) -> Driver:
    registry = Registry.open("memory:")
    for spec in handlers.contracts():
        registry.publish(spec)
    return Driver(gateway_for(registry, handlers, principal).kernel)


# (annotation, the property's derived schema): every shape a parameter may take.
SHAPES: list[tuple[Any, dict[str, Any]]] = [
    (int, {"title": "X", "type": "integer"}),
    (float, {"title": "X", "type": "number"}),
    (bool, {"title": "X", "type": "boolean"}),
    (str, {"title": "X", "type": "string"}),
    (Literal["a", "b"], {"enum": ["a", "b"], "title": "X", "type": "string"}),
    (Color, {"$ref": "#/$defs/Color"}),
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "X"}),
    (list[int], {"items": {"type": "integer"}, "title": "X", "type": "array"}),
    (tuple[int, str], {"maxItems": 2, "minItems": 2, "prefixItems": [
        {"type": "integer"}, {"type": "string"}], "title": "X", "type": "array"}),
    (dict[str, int], {"additionalProperties": {"type": "integer"}, "title": "X",
                      "type": "object"}),
    (Annotated[int, Field(ge=0, le=9, description="a digit")],
     {"description": "a digit", "maximum": 9, "minimum": 0, "title": "X", "type": "integer"}),
    (Annotated[str, Field(min_length=1, max_length=3)],
     {"maxLength": 3, "minLength": 1, "title": "X", "type": "string"}),
    (datetime, {"format": "date-time", "title": "X", "type": "string"}),
    (Leg, None),  # a lone model parameter is the whole input: see the model test
]


@pytest.mark.parametrize(("annotation", "expected"), [s for s in SHAPES if s[1] is not None],
                         ids=lambda v: repr(v)[:40])
def test_each_annotation_shape_derives_its_json_schema_property(
        annotation: Any, expected: dict[str, Any]) -> None:
    def tool(x: int) -> None:
        return None
    tool.__annotations__ = {"x": annotation, "return": None}
    schema = _spec(tool).input_schema
    assert schema["properties"] == {"x": expected}
    assert schema["required"] == ["x"] and schema["type"] == "object"
    assert schema["additionalProperties"] is False
    compile_schema(schema)  # the contracts engine's own checks


def test_defaults_are_optional_properties_and_the_root_has_no_synthesised_title() -> None:
    def tool(a: int, b: str = "x", c: bool = False) -> None:
        return None
    schema = _spec(tool).input_schema
    assert schema == {"additionalProperties": False, "type": "object", "required": ["a"],
                      "properties": {"a": {"title": "A", "type": "integer"},
                                     "b": {"default": "x", "title": "B", "type": "string"},
                                     "c": {"default": False, "title": "C", "type": "boolean"}}}


def test_a_lone_model_parameter_is_the_whole_input_schema_closed_through_its_defs() -> None:
    def tool(args: Lookup) -> None:
        return None
    schema = _spec(tool).input_schema
    assert schema["title"] == "Lookup" and schema["required"] == ["reference"]
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Leg"]["additionalProperties"] is False
    assert schema["properties"]["legs"]["items"] == {"$ref": "#/$defs/Leg"}


def test_closed_false_keeps_the_schemas_as_pydantic_gives_them() -> None:
    def tool(args: Lookup) -> Payment:
        return Payment(reference="", legs=0)
    spec = _spec(tool, closed=False)
    assert "additionalProperties" not in spec.input_schema
    assert "additionalProperties" not in spec.input_schema["$defs"]["Leg"]
    assert spec.output_schema is not None and "additionalProperties" not in spec.output_schema


def test_a_model_that_allows_extra_properties_stays_open_when_closed() -> None:
    def tool(args: OpenModel) -> None:
        return None
    assert _spec(tool).input_schema["additionalProperties"] is True


@pytest.mark.parametrize(("annotation", "expected"), [
    (Payment, {"additionalProperties": False, "properties": {
        "legs": {"title": "Legs", "type": "integer"},
        "reference": {"title": "Reference", "type": "string"}},
        "required": ["reference", "legs"], "title": "Payment", "type": "object"}),
    (int, {"additionalProperties": False, "properties": {"result": {"type": "integer"}},
           "required": ["result"], "type": "object"}),
    (list[Leg], {"$defs": {"Leg": {"additionalProperties": False, "properties": {
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                 "title": "Note"}, "number": {"title": "Number", "type": "integer"}},
        "required": ["number"], "title": "Leg", "type": "object"}},
        "additionalProperties": False, "properties": {"result": {
            "items": {"$ref": "#/$defs/Leg"}, "type": "array"}},
        "required": ["result"], "type": "object"}),
    (str, None), (None, None), (ToolResult, None),
], ids=["model", "int-wrapped", "list-of-models-wrapped", "str", "none", "tool-result"])
def test_the_return_annotation_derives_the_output_schema(
        annotation: Any, expected: dict[str, Any] | None) -> None:
    def tool(a: int) -> None:
        return None
    tool.__annotations__ = {"a": int, "return": annotation}
    assert _spec(tool).output_schema == expected


def test_no_return_annotation_means_no_output_schema() -> None:
    def tool(a: int):  # type: ignore[no-untyped-def]  # the missing annotation is the case
        return None
    assert _spec(tool).output_schema is None


@pytest.mark.parametrize("missing", ["version", "title", "description", "data_classification",
                                     "side_effect", "required_scopes", "tenants"])
def test_every_contract_metadata_keyword_is_required_at_decoration(missing: str) -> None:
    def tool(a: int) -> None:
        return None
    with pytest.raises(ContractError) as caught:
        _spec(tool, **{missing: None})
    assert caught.value.code == "contract.typed_metadata_missing"
    assert caught.value.data["missing"] == [missing]


def test_the_docstring_is_the_description_when_none_is_given() -> None:
    def tool(a: int) -> None:
        """Adds things.

        At length."""
    assert _spec(tool, description=None).description == "Adds things.\n\nAt length."


def test_a_typed_signature_without_any_metadata_is_refused_not_bound_untyped() -> None:
    handlers = ToolHandlers()
    with pytest.raises(ContractError) as caught:
        @handlers.tool("t")
        def tool(args: Lookup) -> None:
            return None
    assert caught.value.code == "contract.typed_metadata_missing"
    assert caught.value.data["missing"] == ["version", "title", "description",
                                            "data_classification", "side_effect",
                                            "required_scopes", "tenants"]


def test_the_untyped_decorator_keeps_working_and_derives_nothing() -> None:
    handlers = ToolHandlers()

    @handlers.tool("t", version="1.0.0")
    def tool(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return "x"
    assert handlers.contracts() == []
    binding = handlers.lookup("t", Version.parse("1.0.0"))
    assert binding is not None and binding.function is tool and binding.contract is None


class LookupArguments(TypedDict):
    reference: str


@pytest.mark.parametrize("source", [
    "def tool(arguments: dict[str, Any], ctx: ToolContext | None = None) -> str: ...",
    "def tool(arguments: Mapping[str, object], ctx: Optional[ToolContext]) -> str: ...",
    "def tool(arguments: LookupArguments) -> str: ...",
    "def tool(arguments: Any, ctx: Any) -> str: ...",
    "def tool(arguments, ctx): ...",
    "def tool(arguments: 'Unresolvable') -> str: ...",
])
def test_the_untyped_api_s_annotations_bind_untyped_without_metadata(source: str) -> None:
    namespace: dict[str, Any] = {"LookupArguments": LookupArguments}
    exec("from collections.abc import Mapping\nfrom typing import Any, Optional\n"
         "from toolkeeper.server import ToolContext\n" + source, namespace)
    handlers = ToolHandlers()
    handlers.tool("t")(namespace["tool"])
    assert handlers.contracts() == []
    assert handlers.lookup("t", Version.parse("1.0.0")) is not None


@pytest.mark.parametrize(("source", "code"), [
    ("def tool(*args: int) -> None: ...", "contract.typed_signature"),
    ("def tool(**kw: int) -> None: ...", "contract.typed_signature"),
    ("def tool(a, /) -> None: ...", "contract.typed_signature"),
    ("def tool(a, b: int) -> None: ...", "contract.typed_signature"),
    ("def tool(a: Callable[[], int]) -> None: ...", "contract.typed_unsupported"),
    ("def tool(a: 'NoSuchName') -> None: ...", "contract.typed_unsupported"),
])
def test_a_signature_that_cannot_be_derived_is_refused_with_a_stable_code(
        source: str, code: str) -> None:
    namespace: dict[str, Any] = {}
    exec("from collections.abc import Callable\n" + source, namespace)
    with pytest.raises(ContractError) as caught:
        _spec(namespace["tool"])
    assert caught.value.code == code


@pytest.mark.parametrize(("meta", "code"), [
    ({"side_effect": "explode"}, "contract.enum"),
    ({"data_classification": "secret"}, "contract.enum"),
    ({"version": "1.0"}, "contract.version"),
    ({"tenants": "acme"}, "contract.type"),
    ({"required_scopes": [""]}, "contract.type"),
])
def test_bad_metadata_is_refused_with_the_contract_files_codes(
        meta: dict[str, Any], code: str) -> None:
    def tool(a: int) -> None:
        return None
    with pytest.raises(ContractError) as caught:
        _spec(tool, **meta)
    assert caught.value.code == code


def test_a_typed_function_receives_the_parsed_model_and_its_context() -> None:
    handlers = ToolHandlers()
    seen: list[Any] = []

    @handlers.tool("payments.lookup", **META)
    async def lookup(args: Lookup, ctx: ToolContext) -> Payment:
        seen.append((args, ctx.version))
        return Payment(reference=args.reference, legs=len(args.legs))

    reply = _drive(handlers).call("payments.lookup", {"reference": "PMT-1",
                                                       "legs": [{"number": 1}]})
    assert reply["result"]["structuredContent"] == {"reference": "PMT-1", "legs": 1}
    assert reply["result"]["isError"] is False
    args, version = seen[0]
    assert isinstance(args, Lookup) and isinstance(args.legs[0], Leg)
    assert str(version) == "1.0.0"


def test_a_typed_function_receives_keyword_arguments_with_defaults_and_a_wrapped_result(
        ) -> None:
    handlers = ToolHandlers()

    @handlers.tool("math.add", **META)
    def add(a: int, json: int = 10) -> int:  # a parameter named like a model attribute
        return a + json

    driver = _drive(handlers)
    assert driver.call("math.add", {"a": 1})["result"]["structuredContent"] == {"result": 11}
    assert driver.call("math.add", {"a": 1, "json": 2})["result"]["structuredContent"] == {
        "result": 3}


def test_unknown_arguments_are_refused_by_the_closed_contract_before_the_function() -> None:
    handlers = ToolHandlers()
    calls: list[int] = []

    @handlers.tool("t", **META)
    def tool(a: int) -> None:
        calls.append(a)
    result = _drive(handlers).call("t", {"a": 1, "b": 2})["result"]
    assert result["isError"] is True and calls == []
    assert result["structuredContent"]["errors"][0]["path"] == "$.b"


def test_a_value_the_schema_accepts_but_pydantic_cannot_parse_is_an_invalid_arguments_result(
        ) -> None:
    handlers = ToolHandlers()

    @handlers.tool("t", **META)
    def tool(when: datetime) -> str:
        return when.isoformat()
    driver = _drive(handlers)
    bad = driver.call("t", {"when": "not a date"})["result"]
    assert bad["isError"] is True
    assert [e["path"] for e in bad["structuredContent"]["errors"]] == ["$.when"]
    assert bad["structuredContent"]["errors"][0]["keyword"] == "datetime_from_date_parsing"
    good = driver.call("t", {"when": "2026-01-02T03:04:05Z"})["result"]
    assert good["content"][0]["text"] == "2026-01-02T03:04:05+00:00"


def test_a_return_value_of_another_type_is_the_handlers_failure() -> None:
    handlers = ToolHandlers()

    @handlers.tool("t", **META)
    def tool(a: int) -> Payment:
        return "not a payment"  # type: ignore[return-value]  # the bug under test
    result = _drive(handlers).call("t", {"a": 1})["result"]
    assert result["isError"] is True and "structuredContent" not in result


def test_merging_handler_sets_keeps_the_derived_contracts() -> None:
    first, second = ToolHandlers(), ToolHandlers()

    @first.tool("t", **META)
    def tool(a: int) -> None:
        return None
    second.merge(first)
    assert second.contracts() == first.contracts() != []


_DERIVE = """
import sys
sys.path.insert(0, {kit!r})
from test_typed_handlers import Lookup, Payment, META
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.server import ToolHandlers
handlers = ToolHandlers()
@handlers.tool("t", **META)
def tool(args: Lookup) -> Payment: ...
sys.stdout.write(canonical_json(handlers.contracts()[0].content_mapping()).decode())
"""


def test_a_derived_contract_is_byte_identical_in_another_process() -> None:
    def tool(args: Lookup) -> Payment:
        return Payment(reference="", legs=0)
    here = canonical_json(_spec(tool).content_mapping()).decode()
    kit = os.path.dirname(__file__)
    there = subprocess.run([sys.executable, "-c", _DERIVE.format(kit=kit)], check=True,
                           capture_output=True, timeout=60, text=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout
    assert json.loads(there) == json.loads(here) and there == here


def test_the_examples_typed_tools_answer_through_the_gateway() -> None:
    from pathlib import Path

    from toolkeeper.cli.handler_refs import load_handlers

    example = Path(__file__).resolve().parents[2] / "examples" / "typed_tools.py"
    shipper = Principal("acme", frozenset({"shipping.read"}), USER.clearance)
    driver = _drive(load_handlers(f"{example}:handlers"), shipper)
    quote = driver.call("shipping.quote", {"weight_kg": 2, "destination": "DE",
                                           "service": "express"})["result"]
    assert quote["structuredContent"] == {"price_cents": 2300, "currency": "EUR", "days": 1}
    convert = driver.call("units.convert", {"value": 2.54, "unit": "in"})["result"]
    assert convert["structuredContent"] == {"result": 6.4516}
    refused = driver.call("shipping.quote", {"weight_kg": 31, "destination": "DE"})["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["errors"][0]["path"] == "$.weight_kg"


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    total_amount: int = Field(alias="totalAmount")


def test_a_returned_model_with_aliases_is_dumped_by_alias_as_its_output_schema_says() -> None:
    handlers = ToolHandlers()

    @handlers.tool("t", **META)
    def tool(a: int) -> Aliased:
        return Aliased(total_amount=a)
    (spec,) = handlers.contracts()
    assert spec.output_schema is not None
    assert list(spec.output_schema["properties"]) == ["totalAmount"]
    result = _drive(handlers).call("t", {"a": 7})["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {"totalAmount": 7}
