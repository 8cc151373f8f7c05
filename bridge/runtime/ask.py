"""The ``ask`` service: who answers a question put to an approval while it stays pending."""

from __future__ import annotations

import json
from typing import Protocol

from openwop_bridge.core.records import InterruptRecord


class AskService(Protocol):
    """Answers ``ask`` questions put to an approval while it stays pending."""

    async def answer(self, record: InterruptRecord, question: str, asked_by: str) -> str:
        """The answer streamed back to the person who asked."""


class RecordingAskService:
    """The default: records the question and answers from what the approval carries."""

    async def answer(self, record: InterruptRecord, question: str, asked_by: str) -> str:
        data = record.payload.get("data", {})
        parts = [f"Your question is recorded on the approval \u201c{data.get('title', '')}\u201d."]
        if data.get("description"):
            parts.append(str(data["description"]))
        if data.get("artifactData") is not None:
            text = json.dumps(data["artifactData"], ensure_ascii=False)
            parts.append(f"Artifact {data.get('artifactId')}: {text[:400]}{'…' if len(text) > 400 else ''}")
        return " ".join(parts)
