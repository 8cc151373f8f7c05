"""MCP and a key-bound gate: no form can carry a passkey, so none is offered; the call says where to answer."""

from __future__ import annotations

import httpx
import mcp_types as types
import pytest

from openwop_bridge import Engine
from openwop_bridge.mcp import calls
from tests.adapters.mcp.test_mcp import MODES, _answers, _client, _gates, served
from tests.conftest import auth

__all__ = ["served"]  # the fixture, shared with the MCP tests


@pytest.mark.parametrize("mode", MODES)
async def test_a_key_bound_gate_gets_no_form_and_stays_open(
    served: tuple[str, httpx.AsyncClient], engine: Engine, mode: str
) -> None:
    url, rest = served
    _gates(engine, "passkey-gated", ["gate"], assurance="key-bound")
    seen: list[types.ElicitRequestParams] = []
    accept = types.ElicitResult(action="accept", content={})
    async with _client(url, "bob", mode=mode, elicit=_answers(accept, seen=seen)) as client:
        if mode == "auto":
            first = await client.session.call_tool("passkey-gated", {}, allow_input_required=True)
            assert isinstance(first, types.CallToolResult), first
        result = await client.call_tool("passkey-gated", {})
    assert seen == []
    assert result.is_error is True and isinstance(result.structured_content, dict)
    body = result.structured_content
    assert body["status"] == "waiting" and "passkey" in body["reason"]
    runs = (await rest.get("/v1/runs", headers=auth("admin"))).json()["runs"]
    assert runs and {r["status"] for r in runs} == {"waiting-approval"}


async def test_an_answer_applied_through_mcp_to_a_key_bound_gate_is_refused(engine: Engine) -> None:
    _gates(engine, "passkey-applied", ["gate"], assurance="key-bound")
    from openwop_bridge.core.auth import Principal
    from openwop_bridge.core.errors import SenderConstraintMissingError
    from tests.helpers import settle

    bob = Principal("bob", scopes=frozenset({"approvals:respond", "runs:read", "runs:create"}))
    run = await engine.create_run(bob, "passkey-applied", tenant="default")
    await settle(engine, run.run_id)
    (record,) = await engine.open_interrupts(run.run_id)
    assert not calls.answerable([record])
    with pytest.raises(SenderConstraintMissingError):
        await calls.apply(engine, bob, record, "accept", {})
    current = await engine.interrupt_record(record.interrupt_id)
    assert current is not None and current.open
