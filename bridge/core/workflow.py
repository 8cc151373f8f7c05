"""Workflow definitions: the OpenWOP JSON format, loaded and indexed for execution.

A definition is validated against the official ``workflow-definition.schema.json``
and then checked for what the schema cannot say (edges that name unknown nodes,
duplicate ids). The parsed form is immutable and shared by every run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from openwop_bridge import spec
from openwop_bridge.core.errors import ValidationError

TRIGGER_RULES = ("all_success", "any_success", "all_complete", "none_failed", "any_failed")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node of a workflow."""

    id: str
    type_id: str
    name: str
    config: Mapping[str, Any]
    inputs: Mapping[str, Any]
    agent: Mapping[str, Any] | None = None
    disabled: bool = False


@dataclass(frozen=True, slots=True)
class EdgeSpec:
    """One edge; ``trigger_rule`` decides which source outcomes let it fire."""

    id: str
    source: str
    target: str
    trigger_rule: str = "all_success"
    condition: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class VariableSpec:
    """A declared workflow variable."""

    name: str
    type: str
    required: bool = False
    default: Any = None
    has_default: bool = False
    sensitive: bool = False


@dataclass(frozen=True)
class WorkflowDefinition:
    """A loaded, validated workflow, indexed for the scheduler."""

    id: str
    name: str
    version: str
    nodes: Mapping[str, NodeSpec]
    edges: tuple[EdgeSpec, ...]
    variables: tuple[VariableSpec, ...]
    channels: Mapping[str, Any]
    settings: Mapping[str, Any]
    raw: Mapping[str, Any]
    incoming: Mapping[str, tuple[EdgeSpec, ...]] = field(default_factory=dict)
    outgoing: Mapping[str, tuple[EdgeSpec, ...]] = field(default_factory=dict)

    @property
    def entry_nodes(self) -> tuple[str, ...]:
        """Nodes with no incoming edges: they start when the run starts.

        A graph that is one cycle (supervisor → dispatch → supervisor) has none;
        it starts at its first node.
        """
        entries = tuple(n for n in self.nodes if not self.incoming.get(n) and not self.nodes[n].disabled)
        if entries:
            return entries
        first = next((n for n in self.nodes if not self.nodes[n].disabled), None)
        return (first,) if first else ()

    def type_ids(self) -> set[str]:
        """Every node typeId the workflow uses."""
        return {n.type_id for n in self.nodes.values()}

    def describe(self) -> dict[str, Any]:
        """A short listing for ``GET /v1/workflows``."""
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "description": self.raw.get("description", ""),
            "nodes": len(self.nodes),
        }


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


#: The types :func:`_freeze` leaves as they are: :func:`thaw` returns them without an ABC check.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def thaw(value: Any) -> Any:
    """Turn a frozen config value back into plain JSON-compatible Python."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is MappingProxyType or isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def _check_schema(raw: dict[str, Any]) -> None:
    """Refuse a document the workflow-definition schema refuses, listing its first problems."""
    problems = [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in spec.validator("workflow-definition.schema.json").iter_errors(raw)
    ]
    if problems:
        wid = raw.get("id", "?")
        raise ValidationError(
            f"workflow {wid!r} is not a valid OpenWOP workflow definition",
            details={"problems": problems[:20]},
        )


def _nodes(raw: Mapping[str, Any], problems: list[str]) -> dict[str, NodeSpec]:
    """The nodes by id; a duplicate id is added to ``problems``."""
    nodes: dict[str, NodeSpec] = {}
    for n in raw["nodes"]:
        if n["id"] in nodes:
            problems.append(f"duplicate node id {n['id']!r}")
        nodes[n["id"]] = NodeSpec(
            id=n["id"],
            type_id=n["typeId"],
            name=n["name"],
            config=_freeze(n.get("config", {})),
            inputs=_freeze(n.get("inputs", {})),
            agent=_freeze(n["agent"]) if n.get("agent") else None,
            disabled=bool(n.get("disabled", False)),
        )
    return nodes


def _edges(raw: Mapping[str, Any], nodes: Mapping[str, NodeSpec], problems: list[str]) -> list[EdgeSpec]:
    """The edges in order; duplicate ids, unknown ends and expression conditions are added to ``problems``."""
    edges: list[EdgeSpec] = []
    seen_edges: set[str] = set()
    for e in raw["edges"]:
        if e["id"] in seen_edges:
            problems.append(f"duplicate edge id {e['id']!r}")
        seen_edges.add(e["id"])
        for end in ("sourceNodeId", "targetNodeId"):
            if e[end] not in nodes:
                problems.append(f"edge {e['id']!r} names unknown node {e[end]!r}")
        cond = e.get("condition")
        if cond and cond.get("type") == "expression":
            problems.append(f"edge {e['id']!r}: expression conditions are not supported by this host")
        edges.append(
            EdgeSpec(
                id=e["id"],
                source=e["sourceNodeId"],
                target=e["targetNodeId"],
                trigger_rule=e.get("triggerRule", "all_success"),
                condition=_freeze(cond) if cond else None,
            )
        )
    return edges


def _variables(raw: Mapping[str, Any]) -> tuple[VariableSpec, ...]:
    """The declared variables, in order."""
    return tuple(
        VariableSpec(
            name=v["name"],
            type=v["type"],
            required=bool(v.get("required", False)),
            default=v.get("defaultValue"),
            has_default="defaultValue" in v,
            sensitive=bool(v.get("sensitive", False)),
        )
        for v in raw["variables"]
    )


def _adjacency(
    nodes: Mapping[str, NodeSpec], edges: list[EdgeSpec]
) -> tuple[Mapping[str, tuple[EdgeSpec, ...]], Mapping[str, tuple[EdgeSpec, ...]]]:
    """The incoming and the outgoing edges of every node."""
    incoming: dict[str, list[EdgeSpec]] = {n: [] for n in nodes}
    outgoing: dict[str, list[EdgeSpec]] = {n: [] for n in nodes}
    for edge in edges:
        incoming[edge.target].append(edge)
        outgoing[edge.source].append(edge)
    return (
        MappingProxyType({k: tuple(v) for k, v in incoming.items()}),
        MappingProxyType({k: tuple(v) for k, v in outgoing.items()}),
    )


def load_workflow(document: Mapping[str, Any]) -> WorkflowDefinition:
    """Validate an OpenWOP workflow document and index it.

    Raises :class:`~openwop_bridge.core.errors.ValidationError` listing every problem found.
    """
    raw = dict(document)
    _check_schema(raw)
    problems: list[str] = []
    nodes = _nodes(raw, problems)
    edges = _edges(raw, nodes, problems)
    if problems:
        raise ValidationError(f"workflow {raw['id']!r} is inconsistent", details={"problems": problems})
    incoming, outgoing = _adjacency(nodes, edges)
    return WorkflowDefinition(
        id=raw["id"],
        name=raw["name"],
        version=raw["version"],
        nodes=MappingProxyType(nodes),
        edges=tuple(edges),
        variables=_variables(raw),
        channels=_freeze(raw.get("channels", {})),
        settings=_freeze(raw.get("settings", {})),
        raw=_freeze(raw),
        incoming=incoming,
        outgoing=outgoing,
    )


def load_workflow_file(path: str | Path) -> WorkflowDefinition:
    """Load one ``*.json`` workflow definition from disk."""
    p = Path(path)
    try:
        document = json.loads(p.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{p.name}: not JSON ({exc})") from exc
    return load_workflow(document)


def load_workflow_dir(directory: str | Path) -> list[WorkflowDefinition]:
    """Load every ``*.json`` workflow definition in a directory (not recursive)."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ValidationError(f"workflow directory {str(folder)!r} does not exist")
    return [load_workflow_file(p) for p in sorted(folder.glob("*.json"))]


def resolve_inputs(
    node: NodeSpec, variables: Mapping[str, Any], outputs: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Resolve a node's input ports against run variables and upstream outputs.

    Expression ports are passed through as their expression text: this host does
    not evaluate expressions, and says so rather than guessing.
    """
    resolved: dict[str, Any] = {}
    for port, ref in node.inputs.items():
        kind = ref.get("type")
        if kind == "static":
            resolved[port] = thaw(ref.get("value"))
        elif kind == "variable":
            name = ref["variableName"]
            if name in variables:
                resolved[port] = variables[name]
            elif not ref.get("optional", False):
                resolved[port] = None
        elif kind == "connection":
            source = outputs.get(ref["nodeId"], {})
            if ref["outputKey"] in source:
                resolved[port] = source[ref["outputKey"]]
            elif not ref.get("optional", False):
                resolved[port] = None
        elif kind == "expression":
            resolved[port] = ref.get("expression")
    return resolved


JSON_TYPES: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {"string": (str,), "number": (int, float), "boolean": (bool,), "object": (dict,), "array": (list, tuple)}
)


def json_type_of(value: Any) -> str:
    """The JSON type name of a decoded JSON value (``null`` for ``None``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name, types in JSON_TYPES.items():
        if name != "boolean" and isinstance(value, types):
            return name
    return type(value).__name__


def variable_type_problems(workflow: WorkflowDefinition, inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """Each caller input whose JSON type is not its declared variable's type."""
    problems = []
    for var in workflow.variables:
        if var.name in inputs and json_type_of(inputs[var.name]) != var.type:
            problems.append({"variable": var.name, "expected": var.type, "got": json_type_of(inputs[var.name])})
    return problems


def initial_variables(workflow: WorkflowDefinition, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Variables at run start: declared defaults overlaid with the caller's inputs.

    The one check of run inputs every surface shares: raises :class:`ValidationError`
    when a required variable has neither an input nor a default, or when an input is
    not of its declared variable's JSON type (``null`` is no type's value).
    """
    problems = variable_type_problems(workflow, inputs)
    if problems:
        named = ", ".join(f"{p['variable']} must be a {p['expected']}, not {p['got']}" for p in problems)
        raise ValidationError(f"invalid input(s): {named}", details={"problems": problems})
    values: dict[str, Any] = {}
    missing = []
    declared = {v.name for v in workflow.variables}
    for var in workflow.variables:
        if var.name in inputs:
            values[var.name] = inputs[var.name]
        elif var.has_default:
            values[var.name] = thaw(var.default)
        elif var.required:
            missing.append(var.name)
    for name, value in inputs.items():
        if name not in declared:
            values[name] = value
    if missing:
        raise ValidationError(f"missing required input(s): {', '.join(missing)}", details={"missing": missing})
    return values


def iter_type_ids(workflows: Iterable[WorkflowDefinition]) -> set[str]:
    """Every typeId used by the given workflows."""
    out: set[str] = set()
    for wf in workflows:
        out |= wf.type_ids()
    return out
