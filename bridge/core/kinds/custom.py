"""The ``custom`` kind: any input, checked by the payload's own ``resumeSchema``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openwop_bridge.core.kinds.base import Kind, present


class CustomKind(Kind):
    """A workflow-defined input named by ``customKind``."""

    name = "custom"
    data_def = "CustomData"
    suspend_reason = "custom"
    label = "Custom input"

    def title(self, data: Mapping[str, Any]) -> str:
        return f"{data.get('customKind', 'custom')} input"


CUSTOM = CustomKind()


def custom(
    custom_kind: str,
    payload: Any = None,
    *,
    key: str | None = None,
    timeout_ms: int | None = None,
    resume_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``custom`` interrupt payload."""
    data: dict[str, Any] = {"customKind": custom_kind, **present(payload=payload)}
    return CUSTOM.payload(data, key=key, timeout_ms=timeout_ms, resume_schema=resume_schema)
