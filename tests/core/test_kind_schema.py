"""The compiled validators of the kinds' data definitions and of supplied schemas."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge import spec
from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.kinds import REGISTRY, compile_schema
from openwop_bridge.core.kinds.schema import definition_errors, schema_errors, spec_definition

SUSPEND = "suspend-request.schema.json"

#: Data documents that break each definition in several ways at once.
BROKEN: list[Any] = [
    {},
    [],
    "text",
    {"title": "", "actions": ["accept", "accept", "nope"], "artifactId": 3, "questions": [{}], "extra": True},
    {"eventType": "", "correlationId": 1, "confidence": 2, "threshold": "x", "conversationId": None},
    {"prompt": ["not", "a", "string"], "turnCount": -1, "message": {}, "outcome": 5},
]


@pytest.mark.parametrize("definition", sorted({k.data_def for k in REGISTRY.values()}))
def test_a_definition_compiled_alone_finds_what_its_reference_finds(definition: str) -> None:
    by_reference = spec.validator(SUSPEND, definition)
    alone = spec_definition(SUSPEND, definition)
    for data in BROKEN:
        assert schema_errors(alone, data, "data") == schema_errors(by_reference, data, "data")
    assert any(schema_errors(alone, data, "data") for data in BROKEN)


def test_a_definition_that_refers_elsewhere_is_resolved_through_its_document() -> None:
    # Every payload definition of the event schemas that holds a $ref keeps resolving it.
    payloads = "run-event-payloads.schema.json"
    referring = [
        name for name, body in spec.schema(payloads)["$defs"].items() if "$ref" in str(body) and name != "_typeIndex"
    ]
    assert referring
    for name in referring:
        assert spec_definition(payloads, name) is spec.validator(payloads, name)


def test_an_invalid_supplied_schema_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(ValidationError, match="resumeSchema is not a valid JSON Schema"):
            compile_schema({"type": 12})
    assert compile_schema({"type": "string"}) is compile_schema({"type": "string"})


APPROVAL = {"title": "Ship it?", "artifactId": "A-1", "artifactType": "release", "actions": ["accept", "reject"]}


@pytest.mark.parametrize(
    "data",
    [
        APPROVAL,
        {**APPROVAL, "actions": ("accept", "reject")},  # a tuple is no JSON array, though its JSON text is one
        {**APPROVAL, "artifactData": float("nan")},  # NaN is a number; its JSON text would be null
        {**APPROVAL, "artifactData": 1 << 70},  # beyond what orjson encodes
        {**APPROVAL, "title": "", "actions": []},
        {"actions": ["nope"], **APPROVAL, "extra": {"x": [1.5, True, None]}},
        {**APPROVAL, "title": "x" * 5000},  # too long to remember
    ],
)
def test_remembered_problems_are_those_a_fresh_check_finds(data: Any) -> None:
    fresh = schema_errors(spec_definition(SUSPEND, "ApprovalData"), data, "data")
    for _ in range(3):
        assert definition_errors(SUSPEND, "ApprovalData", data, "data") == fresh


def test_a_tuple_is_not_taken_for_the_list_its_json_text_shows() -> None:
    listed = definition_errors(SUSPEND, "ApprovalData", APPROVAL, "data")
    tupled = definition_errors(SUSPEND, "ApprovalData", {**APPROVAL, "actions": ("accept", "reject")}, "data")
    assert listed == [] and tupled != []
