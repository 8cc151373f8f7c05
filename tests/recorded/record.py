"""Write the recorded logs: ``python -m tests.recorded.record`` (from the repository root).

Each scenario is driven once on a fresh SQLite engine holding the conformance
fixtures; its file under ``tests/recorded/logs/`` keeps the scenario and what
the engine produced. Re-record only on purpose, when a change of behaviour is
meant, and say so in the commit.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from openwop_bridge import Engine, SqliteStore, Workflow
from tests.conftest import fixture_workflows
from tests.recorded.driver import drive, outcome

LOGS = Path(__file__).parent / "logs"


def _chat() -> dict[str, Any]:
    wf = Workflow("recorded-chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node(
        "talk", type_id="core.conversationGate", config={"initialPrompt": "Hello!", "prompt": "Next?", "turnCount": 3}
    )
    return wf.definition()


SCENARIOS: dict[str, dict[str, Any]] = {
    "approval-accepted": {
        "workflowId": "conformance-approval",
        "steps": [{"answer": "gate", "as": "bob", "value": {"action": "accept"}}],
    },
    "approval-rejected-routed": {
        "workflowId": "conformance-approval-reject-routed",
        "steps": [{"answer": "gate", "as": "bob", "value": {"action": "reject", "feedback": "needs work"}}],
    },
    "quorum-majority": {
        "workflowId": "conformance-interrupt-quorum",
        "steps": [
            {"answer": "gate", "as": "bob", "value": {"action": "accept"}},
            {"answer": "gate", "as": "carol", "value": {"action": "reject", "feedback": "not sure"}},
            {"answer": "gate", "as": "dave", "value": {"action": "accept"}},
            {"answer": "gate", "as": "alice", "value": {"action": "accept"}},
        ],
    },
    "clarification": {
        "workflowId": "conformance-clarification",
        "steps": [{"answer": "ask", "as": "bob", "value": {"answers": {"q1": "blue"}}}],
    },
    "conversation-three-turns": {
        "workflowId": "recorded-chat",
        "workflow": _chat(),
        "steps": [{"answer": "talk", "as": "bob", "value": text} for text in ("one", "two", "three")],
    },
    "subworkflow": {"workflowId": "conformance-subworkflow-parent", "inputs": {}},
    "cancel-cascade": {
        "workflowId": "conformance-interrupt-parent-child-cancel",
        "steps": [{"cancel": "child-gate", "as": "alice", "reason": "no longer needed"}],
    },
}


async def record(name: str, scenario: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Drive one scenario on a fresh engine and return its recording."""
    engine = Engine(SqliteStore(directory / f"{name}.db"), workflows=fixture_workflows())
    await engine.start()
    try:
        run_id = await drive(engine, scenario)
        return {"name": name, "scenario": scenario, "recorded": await outcome(engine, run_id)}
    finally:
        await engine.stop()


async def main(names: list[str]) -> None:
    LOGS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or list(SCENARIOS):
            doc = await record(name, SCENARIOS[name], Path(tmp))
            path = LOGS / f"{name}.json"
            path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            print(f"{path}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
