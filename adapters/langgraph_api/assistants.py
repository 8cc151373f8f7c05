"""Assistants: one per served workflow, with real times and a version that moves when it changes.

LangGraph clients show an assistant's ``created_at``, ``updated_at`` and ``version``. The host
keeps, per workflow id, when it first served the workflow, when it last served a changed
definition, and how many definitions it has served, beside the runs in the database: one
small record per loaded workflow, so what is stored is bounded by what the operator loads.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from openwop_bridge import Engine, WorkflowDefinition

NAMESPACE = "langgraph.assistant"


def digest(workflow: WorkflowDefinition) -> str:
    """A fingerprint of the definition as loaded (key order does not matter)."""
    raw = orjson.dumps(workflow.raw, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(raw).hexdigest()


class Assistants:
    """The assistant record of each workflow, written when it is first asked for or has changed."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._state = engine.adapter_state(NAMESPACE)

    async def record(self, workflow: WorkflowDefinition) -> dict[str, Any]:
        """``{"createdAt", "updatedAt", "version", "digest"}`` for ``workflow`` as served now."""
        fingerprint = digest(workflow)
        for _ in range(3):  # another instance may write between the read and the write
            stored = await self._state.get(workflow.id)
            now = self._engine.clock.now_ms()
            if stored is None:
                fresh = {"createdAt": now, "updatedAt": now, "version": 1, "digest": fingerprint}
                if await self._state.put(workflow.id, fresh, only_if_absent=True):
                    return fresh
                continue
            if stored.get("digest") == fingerprint:
                return dict(stored)
            changed = {**stored, "updatedAt": now, "version": int(stored.get("version", 1)) + 1, "digest": fingerprint}
            if await self._state.replace(workflow.id, stored, changed):
                return changed
        stored = await self._state.get(workflow.id)
        return dict(stored) if stored is not None else {"createdAt": 0, "updatedAt": 0, "version": 1}
