"""Error codes: each constant documented, one table from code to HTTP status (mcp-wire 4.5)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from toolkeeper.protocol import codes
from toolkeeper.protocol.codes import http_status_for


def test_every_error_code_constant_carries_a_docstring() -> None:
    tree = ast.parse(Path(codes.__file__).read_text())
    body = tree.body
    documented = set()
    for node, after in itertools.pairwise(body):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            documented.add(node.target.id)
    constants = {n for n in codes.__all__ if n.isupper() and isinstance(getattr(codes, n), int)}
    assert constants <= documented
    assert len(constants) == 10


@pytest.mark.parametrize(("code", "status"), [
    (codes.PARSE_ERROR, 400), (codes.INVALID_REQUEST, 400), (codes.INVALID_PARAMS, 400),
    (codes.HEADER_MISMATCH, 400), (codes.MISSING_REQUIRED_CLIENT_CAPABILITY, 400),
    (codes.UNSUPPORTED_PROTOCOL_VERSION, 400), (codes.METHOD_NOT_FOUND, 404),
    (codes.RATE_LIMITED, 429),
    (codes.INTERNAL_ERROR, 200), (-32000, 200), (-32800, 200), (42, 200),
])
def test_json_rpc_codes_map_to_the_documented_http_status(code: int, status: int) -> None:
    assert http_status_for(code) == status


def test_the_modern_error_codes_are_the_final_2026_numbers() -> None:
    assert (codes.HEADER_MISMATCH, codes.MISSING_REQUIRED_CLIENT_CAPABILITY,
            codes.UNSUPPORTED_PROTOCOL_VERSION) == (-32020, -32021, -32022)
