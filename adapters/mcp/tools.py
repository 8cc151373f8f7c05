"""Workflows as MCP tools: one tool per workflow, its declared variables as the input schema."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from openwop_bridge import WorkflowDefinition

#: Variables of these OpenWOP types take the JSON Schema type of the same name.
JSON_SCHEMA_TYPES = {"string": "string", "number": "number", "boolean": "boolean", "object": "object", "array": "array"}


def input_schema(workflow: WorkflowDefinition) -> dict[str, Any]:
    """An object schema with one property per declared variable, ``required`` naming the required ones.

    A required variable with a default is not required of the caller (the default fills it).
    """
    props: dict[str, Any] = {}
    required: list[str] = []
    for raw in workflow.raw.get("variables", ()):
        prop: dict[str, Any] = {"type": JSON_SCHEMA_TYPES[raw["type"]]}
        if raw.get("description"):
            prop["description"] = raw["description"]
        if "defaultValue" in raw:
            prop["default"] = _plain(raw["defaultValue"])
        props[raw["name"]] = prop
    for var in workflow.variables:
        if var.required and not var.has_default:
            required.append(var.name)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def _plain(value: Any) -> Any:
    if isinstance(value, dict | tuple | list) or hasattr(value, "items"):
        if hasattr(value, "items"):
            return {k: _plain(v) for k, v in value.items()}
        return [_plain(v) for v in value]
    return value


def tool_of(workflow: WorkflowDefinition) -> types.Tool:
    """The tool that runs one workflow."""
    description = str(workflow.raw.get("description") or "") or f"Run the workflow {workflow.name!r}."
    return types.Tool(
        name=workflow.id,
        title=workflow.name,
        description=description
        + " A person may be asked to approve or answer along the way; the result is the run's outputs.",
        input_schema=input_schema(workflow),
    )


def tools_of(workflows: list[WorkflowDefinition]) -> list[types.Tool]:
    """Every workflow's tool, sorted by name."""
    return [tool_of(wf) for wf in sorted(workflows, key=lambda w: w.id)]
