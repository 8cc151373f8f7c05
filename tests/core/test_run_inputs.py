"""Run inputs against declared workflow variables: the one check every surface shares."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge import ValidationError, load_workflow
from openwop_bridge.core.workflow import initial_variables


def _workflow(variables: list[dict[str, Any]]) -> Any:
    return load_workflow(
        {
            "id": "typed",
            "name": "Typed",
            "version": "1.0.0",
            "nodes": [
                {
                    "id": "a",
                    "typeId": "core.noop",
                    "name": "A",
                    "position": {"x": 0, "y": 0},
                    "config": {},
                    "inputs": {},
                }
            ],
            "edges": [],
            "triggers": [],
            "variables": variables,
            "metadata": {},
            "settings": {},
        }
    )


WF = _workflow(
    [
        {"name": "amount", "type": "number", "required": True},
        {"name": "note", "type": "string"},
        {"name": "urgent", "type": "boolean", "defaultValue": False},
        {"name": "lines", "type": "array"},
        {"name": "meta", "type": "object"},
    ]
)


def test_inputs_of_the_declared_types_are_accepted() -> None:
    got = initial_variables(WF, {"amount": 12, "note": "n", "lines": [1], "meta": {"a": 1}, "extra": "x"})
    assert got == {"amount": 12, "note": "n", "urgent": False, "lines": [1], "meta": {"a": 1}, "extra": "x"}
    assert initial_variables(WF, {"amount": 1.5})["amount"] == 1.5


@pytest.mark.parametrize(
    ("inputs", "got"),
    [
        ({"amount": "lots"}, "string"),
        ({"amount": True}, "boolean"),
        ({"amount": None}, "null"),
        ({"amount": [1]}, "array"),
        ({"amount": 1, "urgent": "yes"}, "string"),
        ({"amount": 1, "meta": []}, "array"),
        ({"amount": 1, "lines": {}}, "object"),
    ],
)
def test_a_wrong_type_is_refused(inputs: dict[str, Any], got: str) -> None:
    with pytest.raises(ValidationError) as err:
        initial_variables(WF, inputs)
    (problem,) = err.value.details["problems"]
    assert problem["got"] == got


def test_a_missing_required_variable_is_refused() -> None:
    with pytest.raises(ValidationError) as err:
        initial_variables(WF, {"note": "n"})
    assert err.value.details == {"missing": ["amount"]}
