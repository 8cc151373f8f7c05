"""The gate of a batched tool-call review: which OpenWOP actions it offers, and what its check refuses."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge.core.errors import ValidationError
from openwop_bridge.langgraph.payloads import check_tool_review, map_interrupt


def review(*names: str) -> dict[str, Any]:
    """A batched ``HumanInTheLoopMiddleware`` request whose calls allow only approve and reject."""
    return {
        "action_requests": [{"name": n, "args": {"n": i}, "description": ""} for i, n in enumerate(names)],
        "review_configs": [{"action_name": n, "allowed_decisions": ["approve", "reject"]} for n in names],
    }


def test_one_call_offers_only_what_it_allows() -> None:
    assert map_interrupt(review("send"), None).payload["data"]["actions"] == ["accept", "reject"]


def test_several_calls_offer_edit_accept_for_per_call_decisions() -> None:
    payload = map_interrupt(review("send", "delete"), None).payload
    assert payload["data"]["actions"] == ["accept", "reject", "edit-accept"]
    mixed = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}
    check_tool_review(payload, {"action": "edit-accept", "editedArtifactData": mixed})
    # But no call may be edited: neither allows it.
    edited = {"actions": [{"name": "send", "args": {"n": 9}}, {"name": "delete", "args": {"n": 1}}]}
    with pytest.raises(ValidationError, match="decision 0"):
        check_tool_review(payload, {"action": "edit-accept", "editedArtifactData": edited})
    edit = {"decisions": [{"type": "edit", "edited_action": {"name": "send", "args": {}}}, {"type": "approve"}]}
    with pytest.raises(ValidationError, match="allows approve, reject"):
        check_tool_review(payload, {"action": "edit-accept", "editedArtifactData": edit})
