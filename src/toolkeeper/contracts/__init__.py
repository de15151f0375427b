"""Tool contracts and the operations on them: semver, the spec model, strict validation,
idempotent repair, and change classification (SPEC section 1).

This package is a leaf: it imports nothing of toolkeeper but ``toolkeeper.errors`` (a test says so).
"""

from toolkeeper.contracts.changes import Bump, Change, Verdict
from toolkeeper.contracts.classify import classify, classify_schemas
from toolkeeper.contracts.repair import Repair, RepairResult, repair, repair_arguments
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import (
    RETRYABLE,
    DataClassification,
    SideEffect,
    Status,
    ToolSpec,
    classification_rank,
    spec_from_mapping,
    spec_to_mapping,
)
from toolkeeper.contracts.validate import CompiledSchema, Issue, compile_schema, validate

__all__ = [
    "RETRYABLE",
    "Bump",
    "Change",
    "CompiledSchema",
    "DataClassification",
    "Issue",
    "Repair",
    "RepairResult",
    "SideEffect",
    "Status",
    "ToolSpec",
    "Verdict",
    "Version",
    "classification_rank",
    "classify",
    "classify_schemas",
    "compile_schema",
    "repair",
    "repair_arguments",
    "spec_from_mapping",
    "spec_to_mapping",
    "validate",
]
