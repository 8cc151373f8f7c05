"""Which node runs next: edge tokens and trigger rules, with no I/O.

When a node settles, each outgoing edge receives a token: positive when the
edge's trigger rule accepts the source's outcome (and its condition holds),
negative otherwise. A node is evaluated whenever a token reaches it:

- edges with ``all_success`` / ``none_failed`` / ``all_complete`` must *all*
  carry a positive token; any negative one skips the node;
- edges with ``any_success`` / ``any_failed`` need *one* positive token; when
  every one of them is negative the node is skipped;
- otherwise the node waits.

Tokens are consumed when the node starts or is skipped, which is what lets a
loop (gate → revise → gate) visit a node again. The table of rules lives in
:data:`FIRES_ON`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from openwop_bridge.core.workflow import EdgeSpec, WorkflowDefinition

COMPLETED = "completed"
FAILED = "failed"
SKIPPED = "skipped"
CANCELLED = "cancelled"

#: For each trigger rule, the source outcomes on which an edge fires.
FIRES_ON: Mapping[str, frozenset[str]] = {
    "all_success": frozenset({COMPLETED}),
    "any_success": frozenset({COMPLETED}),
    "none_failed": frozenset({COMPLETED, SKIPPED}),
    "all_complete": frozenset({COMPLETED, FAILED, SKIPPED}),
    "any_failed": frozenset({FAILED}),
}

_ANY_RULES = frozenset({"any_success", "any_failed"})


class Verdict(Enum):
    """What to do with a node after a token reached it."""

    RUN = "run"
    SKIP = "skip"
    WAIT = "wait"


def failure_is_handled(workflow: WorkflowDefinition, node_id: str) -> bool:
    """True when some outgoing edge fires on the node's failure, so the run goes on."""
    return any(FAILED in FIRES_ON[e.trigger_rule] for e in workflow.outgoing.get(node_id, ()))


def _lookup(outputs: Mapping[str, Any], path: str) -> Any:
    current: Any = {"output": outputs, **outputs}
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        else:
            return None
    return current


def condition_holds(condition: Mapping[str, Any] | None, outputs: Mapping[str, Any]) -> bool:
    """Evaluate an ``EdgeCondition`` against the source node's outputs."""
    if not condition:
        return True
    kind = condition.get("type", "equals")
    left = _lookup(outputs, str(condition.get("left", "")))
    right = condition.get("right")
    if kind == "equals":
        return bool(left == right)
    if kind == "notEquals":
        return bool(left != right)
    if kind == "contains":
        try:
            return bool(right in left)
        except TypeError:
            return False
    if kind == "regex":
        return isinstance(left, str) and re.search(str(right), left) is not None
    return False


def settle(
    workflow: WorkflowDefinition,
    tokens: dict[str, bool],
    node_id: str,
    outcome: str,
    outputs: Mapping[str, Any] | None = None,
    route: Iterable[str] | None = None,
) -> list[str]:
    """Place tokens on the node's outgoing edges; return the targets to evaluate.

    ``route``, when given by a completed node, names the edge ids (or target node
    ids) allowed to fire; every other outgoing edge gets a negative token.
    """
    allowed = set(route) if route is not None else None
    targets: list[str] = []
    for edge in workflow.outgoing.get(node_id, ()):
        fires = outcome in FIRES_ON[edge.trigger_rule]
        if fires and outcome == COMPLETED:
            fires = condition_holds(edge.condition, outputs or {})
            if allowed is not None and edge.id not in allowed and edge.target not in allowed:
                fires = False
        tokens[edge.id] = fires
        if edge.target not in targets:
            targets.append(edge.target)
    return targets


def evaluate(workflow: WorkflowDefinition, tokens: Mapping[str, bool], node_id: str) -> Verdict:
    """Decide whether a node runs, is skipped or waits, from the tokens on its edges."""
    edges: tuple[EdgeSpec, ...] = workflow.incoming.get(node_id, ())
    if not edges:
        return Verdict.RUN
    all_type = [e for e in edges if e.trigger_rule not in _ANY_RULES]
    any_type = [e for e in edges if e.trigger_rule in _ANY_RULES]
    if any(tokens.get(e.id) is False for e in all_type):
        return Verdict.SKIP
    if any_type and all(tokens.get(e.id) is False for e in any_type):
        return Verdict.SKIP
    all_ready = all(tokens.get(e.id) is True for e in all_type)
    any_ready = not any_type or any(tokens.get(e.id) is True for e in any_type)
    return Verdict.RUN if all_ready and any_ready else Verdict.WAIT


def consume(workflow: WorkflowDefinition, tokens: dict[str, bool], node_id: str) -> None:
    """Remove the tokens on a node's incoming edges (it started or was skipped)."""
    for edge in workflow.incoming.get(node_id, ()):
        tokens.pop(edge.id, None)
