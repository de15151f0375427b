"""The self-containment check (``$ref`` resolution and cycle detection) does work linear in the
document, whatever its shape: long chains of references, wide fan-out, references into data
that each make a new schema, and nesting far deeper than Python's recursion limit.

Why a time bound: the property pinned is linear growth, and a CPU-time bound is how a quadratic
walk shows. Each bound is generous (tens of times what the linear check takes on a shared
2-core machine), while the quadratic check the bound rules out took minutes at these sizes
(0.33 s at 2,000 references, 3.7 s at 8,000, and four times as long at each doubling)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli
from toolkeeper.contracts.formats import find_unknown_format
from toolkeeper.contracts.references import SchemaProblem, find_reference_problem
from toolkeeper.contracts.validate import compile_schema, validate
from toolkeeper.errors import SchemaError

SIZES = (2_000, 8_000, 32_000)
BOUND_SECONDS = 10.0  # for one check of the largest document; the linear check takes ~0.3 s
DEEP = 10_000  # levels: ten times Python's default recursion limit


def checked(schema: Any) -> SchemaProblem | None:
    started = time.process_time()
    problem = find_reference_problem(schema)
    assert time.process_time() - started < BOUND_SECONDS
    return problem


def chain(n: int) -> dict[str, Any]:
    """``a0 -> a1 -> ... -> an``, every step in place."""
    defs: dict[str, Any] = {f"a{i}": {"$ref": f"#/$defs/a{i + 1}"} for i in range(n)}
    return {"$ref": "#/$defs/a0", "$defs": {**defs, f"a{n}": {"type": "string"}}}


def fan_out(n: int) -> dict[str, Any]:
    return {"$defs": {"t": {"type": "string"}},
            "properties": {f"p{i}": {"$ref": "#/$defs/t"} for i in range(n)}}


def data_chain(n: int) -> dict[str, Any]:
    """Each reference points into ``enum``, at an object holding the next reference: every
    step makes one more schema out of data."""
    data = [*({"$ref": f"#/$defs/d/enum/{i + 1}"} for i in range(n)), {"type": "string"}]
    return {"allOf": [{"$ref": "#/$defs/d/enum/0"}], "$defs": {"d": {"enum": data}}}


def data_nested(n: int) -> dict[str, Any]:
    """References into data, the deepest first: ``#/enum/0/a/a/.../a``."""
    inner: dict[str, Any] = {"type": "string"}
    for _ in range(n):
        inner = {"a": inner}
    pointers = [{"$ref": "#/enum/0" + "/a" * depth} for depth in range(n, -1, -100)]
    return {"enum": [inner], "allOf": pointers}


def nested(depth: int, leaf: dict[str, Any], pad: str = "") -> dict[str, Any]:
    schema = leaf
    for _ in range(depth):
        schema = {"not": schema, "description": pad}
    return schema


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("shape", [chain, fan_out, data_chain],
                         ids=["chain", "fan_out", "refs_into_data"])
def test_valid_references_are_checked_in_linear_time(
        shape: Callable[[int], dict[str, Any]], n: int) -> None:
    assert checked(shape(n)) is None


def test_references_into_nested_data_deepest_first_are_checked_in_linear_time() -> None:
    assert checked(data_nested(DEEP)) is None


@pytest.mark.parametrize("n", SIZES)
def test_a_long_chain_that_loops_back_is_a_cycle_at_its_closing_reference(n: int) -> None:
    schema = chain(n)
    schema["$defs"][f"a{n}"] = {"$ref": "#/$defs/a0"}
    problem = checked(schema)
    assert problem is not None
    assert (problem.code, problem.location) == ("schema.ref_cycle", ("$defs", f"a{n}", "$ref"))


@pytest.mark.parametrize("n", SIZES)
def test_a_bad_reference_at_the_end_of_a_data_chain_is_refused_with_its_path(n: int) -> None:
    schema = data_chain(n)
    schema["$defs"]["d"]["enum"][n] = {"$ref": "urn:elsewhere"}
    problem = checked(schema)
    assert problem is not None
    assert (problem.code, problem.location) == ("schema.ref_external",
                                                ("$defs", "d", "enum", n, "$ref"))


def test_a_wide_document_of_refs_into_data_compiles_and_validates() -> None:
    compiled = compile_schema(data_chain(SIZES[-1]))
    assert validate(compiled, "ok") == []
    assert [issue.keyword for issue in validate(compiled, 1)] == ["type"]


def test_nesting_far_past_the_recursion_limit_is_walked_without_recursion() -> None:
    deep = nested(DEEP, {"$ref": "#/$defs/nowhere"})
    problem = checked(deep)
    assert problem is not None
    assert problem.code == "schema.ref_unresolved"
    assert problem.location == ("not",) * DEEP + ("$ref",)


def test_an_unknown_format_nested_far_past_the_recursion_limit_is_named_with_its_path() -> None:
    problem = find_unknown_format(nested(DEEP, {"format": "no-such-format"}))
    assert problem is not None
    assert (problem.code, problem.location) == ("schema.format_unknown",
                                                ("not",) * DEEP + ("format",))


def test_a_4_mib_schema_nested_10000_deep_is_a_schema_error_not_a_recursion_error() -> None:
    deep = nested(DEEP, {"type": "string"}, pad="x" * 400)  # about 4 MiB as JSON
    assert checked(deep) is None
    with pytest.raises(SchemaError) as caught:
        compile_schema(deep)
    assert caught.value.code == "schema.invalid"


def test_a_4_mib_document_nested_10000_deep_is_refused_by_the_cli_as_too_deep(
        tmp_path: Path) -> None:
    text = '{"not": ' * DEEP + '{"description": "' + "x" * (4 * 2**20 - 9 * DEEP - 40) + '"}' \
        + "}" * DEEP
    assert len(text.encode()) <= 4 * 2**20
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["validate", str(path), '"x"', "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "json.too_deep"


@pytest.mark.parametrize("pointer", ["#/allOf/\u00b2", "#/allOf/" + "9" * 5_000, "#/allOf/00"])
def test_an_array_index_that_is_not_plain_ascii_decimal_is_unresolved(pointer: str) -> None:
    problem = find_reference_problem({"allOf": [{"$ref": pointer}]})
    assert problem is not None
    assert (problem.code, problem.location) == ("schema.ref_unresolved", ("allOf", 0, "$ref"))


@pytest.mark.parametrize(("declared", "referenced"), [
    ("https://h:443/x", "https://h/x"),
    ("https://h/x", "https://h:443/x"),
    ("http://h:80/x", "http://h/x"),
    ("https://%68/x", "https://h/x"),
    ("https://H/x", "https://%68/x"),
])
def test_a_ref_naming_the_document_by_an_equivalent_uri_resolves_as_the_validator_does(
        declared: str, referenced: str) -> None:
    schema = {"$id": declared, "$ref": f"{referenced}#/$defs/a", "$defs": {"a": {"type": "string"}}}
    assert find_reference_problem(schema) is None
    compiled = compile_schema(schema)
    assert validate(compiled, "ok") == []
    assert [issue.keyword for issue in validate(compiled, 1)] == ["type"]


@pytest.mark.parametrize(("declared", "referenced"), [
    ("https://h:8443/x", "https://h/x"),
    ("http://h:443/x", "http://h/x"),
    ("https://%2F/x", "https:///x"),
])
def test_a_ref_to_a_different_port_or_an_encoded_reserved_host_stays_external(
        declared: str, referenced: str) -> None:
    schema = {"$id": declared, "$ref": f"{referenced}#/$defs/a", "$defs": {"a": {"type": "string"}}}
    problem = find_reference_problem(schema)
    assert problem is not None
    assert (problem.code, problem.location) == ("schema.ref_external", ("$ref",))
