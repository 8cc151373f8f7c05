"""The trigger-rule table and token flow, driven without any I/O."""

from __future__ import annotations

import pytest

from openwop_bridge.core import graph
from openwop_bridge.core.graph import Verdict
from openwop_bridge.core.workflow import load_workflow
from openwop_bridge.spec import load_fixture
from tests.helpers import workflow_doc


def _wf(edges: list[tuple[str, str, str]]) -> graph.WorkflowDefinition:  # type: ignore[name-defined]
    nodes = sorted({n for e in edges for n in e[:2]})
    return load_workflow(
        workflow_doc(
            "g",
            [
                {"id": n, "typeId": "core.noop", "name": n, "position": {"x": 0, "y": 0}, "config": {}, "inputs": {}}
                for n in nodes
            ],
            [{"id": f"{s}-{t}", "sourceNodeId": s, "targetNodeId": t, "triggerRule": r} for s, t, r in edges],
        )
    )


@pytest.mark.parametrize(
    ("rule", "outcome", "fires"),
    [
        ("all_success", "completed", True),
        ("all_success", "failed", False),
        ("all_success", "skipped", False),
        ("any_success", "completed", True),
        ("any_success", "failed", False),
        ("none_failed", "completed", True),
        ("none_failed", "skipped", True),
        ("none_failed", "failed", False),
        ("all_complete", "completed", True),
        ("all_complete", "failed", True),
        ("all_complete", "skipped", True),
        ("any_failed", "failed", True),
        ("any_failed", "completed", False),
        ("any_failed", "skipped", False),
    ],
)
def test_edge_fires_per_rule(rule: str, outcome: str, fires: bool) -> None:
    wf = _wf([("a", "b", rule)])
    tokens: dict[str, bool] = {}
    assert graph.settle(wf, tokens, "a", outcome) == ["b"]
    assert tokens["a-b"] is fires
    assert graph.evaluate(wf, tokens, "b") is (Verdict.RUN if fires else Verdict.SKIP)


def test_all_type_waits_for_every_edge_and_any_type_for_one() -> None:
    wf = _wf(
        [("a", "c", "all_success"), ("b", "c", "all_success"), ("x", "z", "any_success"), ("y", "z", "any_success")]
    )
    tokens: dict[str, bool] = {}
    graph.settle(wf, tokens, "a", "completed")
    assert graph.evaluate(wf, tokens, "c") is Verdict.WAIT
    graph.settle(wf, tokens, "b", "completed")
    assert graph.evaluate(wf, tokens, "c") is Verdict.RUN
    graph.settle(wf, tokens, "x", "failed")
    assert graph.evaluate(wf, tokens, "z") is Verdict.WAIT
    graph.settle(wf, tokens, "y", "completed")
    assert graph.evaluate(wf, tokens, "z") is Verdict.RUN


def test_any_type_skips_only_when_every_edge_is_blocked() -> None:
    wf = _wf([("x", "z", "any_success"), ("y", "z", "any_success")])
    tokens: dict[str, bool] = {}
    graph.settle(wf, tokens, "x", "failed")
    graph.settle(wf, tokens, "y", "skipped")
    assert graph.evaluate(wf, tokens, "z") is Verdict.SKIP


def test_consume_lets_a_loop_visit_again() -> None:
    wf = load_workflow(load_fixture("conformance-approval-reject-loopback"))
    tokens: dict[str, bool] = {}
    graph.settle(wf, tokens, "start", "completed")
    assert graph.evaluate(wf, tokens, "gate") is Verdict.RUN
    graph.consume(wf, tokens, "gate")
    graph.settle(wf, tokens, "gate", "failed")
    assert graph.evaluate(wf, tokens, "revise") is Verdict.RUN
    graph.consume(wf, tokens, "revise")
    graph.settle(wf, tokens, "revise", "completed")
    assert graph.evaluate(wf, tokens, "gate") is Verdict.RUN


def test_route_restricts_firing_edges_and_conditions_apply() -> None:
    wf = _wf([("a", "b", "all_success"), ("a", "c", "all_success")])
    tokens: dict[str, bool] = {}
    graph.settle(wf, tokens, "a", "completed", {}, route=["b"])
    assert tokens == {"a-b": True, "a-c": False}
    assert graph.condition_holds({"type": "equals", "left": "output.approved", "right": True}, {"approved": True})
    assert not graph.condition_holds({"type": "notEquals", "left": "n", "right": 1}, {"n": 1})
    assert graph.condition_holds({"type": "contains", "left": "tags", "right": "x"}, {"tags": ["x"]})
    assert graph.condition_holds({"type": "regex", "left": "s", "right": "^ab"}, {"s": "abc"})


def test_failure_is_handled_only_by_an_edge_that_fires_on_failure() -> None:
    routed = load_workflow(load_fixture("conformance-approval-reject-routed"))
    plain = load_workflow(load_fixture("conformance-approval"))
    assert graph.failure_is_handled(routed, "gate")
    assert not graph.failure_is_handled(plain, "gate")


def test_a_pure_cycle_starts_at_its_first_node() -> None:
    wf = load_workflow(load_fixture("conformance-orchestrator-low-confidence"))
    assert wf.entry_nodes == ("supervisor",)
