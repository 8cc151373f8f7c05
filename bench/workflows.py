"""The workflows the scenarios run, as OpenWOP documents.

Each is the smallest honest version of its case: one approval gate, one
clarification gate, one conversation gate. The HTTP scenarios write them to a
folder for ``serve --workflows``; in-process scenarios load the same documents.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openwop_bridge.core.workflow import WorkflowDefinition, load_workflow

APPROVAL = "bench-approval"
CLARIFICATION = "bench-clarification"
CONVERSATION = "bench-conversation"

#: The node each workflow waits in (the ``{nodeId}`` of its resolve URL).
GATE = "gate"

#: What each workflow's interrupt is answered with.
ANSWERS: dict[str, Any] = {
    APPROVAL: {"action": "accept"},
    CLARIFICATION: {"answers": {"q1": "blue"}},
}

CONVERSATION_TURNS = 100


def approval_answer() -> dict[str, Any]:
    """A copy of the approval workflow's answer, for a client that may add to it."""
    return dict(ANSWERS[APPROVAL])


def _document(workflow_id: str, type_id: str, config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": workflow_id,
        "name": workflow_id,
        "version": "1.0",
        "description": "benchmark workflow",
        "nodes": [
            {
                "id": GATE,
                "typeId": type_id,
                "name": "Gate",
                "position": {"x": 0, "y": 0},
                "inputs": {},
                "config": config,
            }
        ],
        "edges": [],
        "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
        "variables": [],
        "metadata": {"tags": ["bench"]},
        "settings": {"timeout": 0},
        **extra,
    }


def documents() -> list[dict[str, Any]]:
    """Every benchmark workflow document."""
    return [
        _document(
            APPROVAL,
            "core.approvalGate",
            {
                "title": "Approve expense EXP-1",
                "artifactId": "EXP-1",
                "artifactType": "expense-report",
                "actions": ["accept", "reject"],
            },
        ),
        _document(
            CLARIFICATION,
            "core.clarificationGate",
            {"questions": [{"id": "q1", "question": "Which colour?"}]},
        ),
        _document(
            CONVERSATION,
            "core.conversationGate",
            {"initialPrompt": "A long conversation.", "prompt": "Next?", "turnCount": CONVERSATION_TURNS},
            channels={"conversation": {"reducer": "message", "schema": {"type": "array"}}},
        ),
    ]


def definitions() -> list[WorkflowDefinition]:
    """The benchmark workflows, loaded."""
    return [load_workflow(doc) for doc in documents()]


def write(folder: Path) -> Path:
    """Write every benchmark workflow as ``<id>.json`` into ``folder``; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    for doc in documents():
        (folder / f"{doc['id']}.json").write_text(json.dumps(doc, indent=2))
    return folder
