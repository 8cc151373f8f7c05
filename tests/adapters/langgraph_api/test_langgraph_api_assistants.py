"""Assistants carry real times and a version: when the host first served the workflow, when it
last served a changed definition, and how many it has served; read through ``langgraph_sdk``."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from langgraph_sdk import get_client

from openwop_bridge import Engine, load_workflow
from openwop_bridge.langgraph_api.assistants import Assistants
from tests.conftest import TOKENS

DEMO = Path(__file__).resolve().parents[3] / "bridge" / "demo" / "demo-expense-approval.json"


def _ms(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


async def test_assistants_carry_the_time_the_host_first_served_them(served: str) -> None:
    before = time.time() * 1000 - 1000
    client = get_client(url=served, api_key=TOKENS["admin"])
    first = await client.assistants.get("demo-expense-approval")
    assert before <= _ms(first["created_at"]) <= time.time() * 1000 + 1000
    assert first["updated_at"] == first["created_at"] and first["version"] == 1
    listed = {a["assistant_id"]: a for a in await client.assistants.search(limit=100)}
    assert listed["demo-expense-approval"]["created_at"] == first["created_at"], "the time is kept, not re-read"
    assert all(not a["created_at"].startswith("1970") for a in listed.values())


async def test_a_changed_definition_moves_the_version_and_keeps_the_creation_time(engine: Engine) -> None:
    document = json.loads(DEMO.read_text())
    assistants = Assistants(engine)
    original = await assistants.record(load_workflow(document))
    assert await assistants.record(load_workflow(document)) == original
    changed = load_workflow({**document, "description": "Approve the expense report (second edition)."})
    after = await assistants.record(changed)
    assert after["version"] == 2 and after["createdAt"] == original["createdAt"]
    assert after["updatedAt"] >= original["updatedAt"]
    assert (await assistants.record(changed))["version"] == 2, "an unchanged definition keeps its version"
