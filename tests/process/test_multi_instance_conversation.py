"""A conversation turn answered at once on two ``serve`` processes sharing one PostgreSQL database.

Answers naming one turn: exactly one wins, whichever instance takes it; every other answer is
``409 interrupt_already_resolved``, and none lands on a later turn.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_bridge.spec import load_fixture
from tests.process.test_multi_instance import WAIT_S, H, Instance, create, events, http, wait_for
from tests.server import ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

__all__ = ["http"]  # the shared client fixture

DEMO = Path(__file__).resolve().parents[2] / "bridge" / "demo" / "demo-conversation.json"


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "conformance-approval.json").write_text(json.dumps(load_fixture("conformance-approval")))
    (folder / "demo-conversation.json").write_text(DEMO.read_text())
    return folder


@pytest.fixture
def pair(pg_url: str, workflows: Path, tmp_path: Path) -> object:
    a = Instance(pg_url, workflows, tmp_path, "a").start()
    b: ServerProcess | None = None
    try:
        b = Instance(pg_url, workflows, tmp_path, "b").start()
        yield a, b
    finally:
        a.stop()
        if b is not None:
            b.stop()


async def test_concurrent_answers_to_one_turn_over_two_instances_have_one_winner(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    run_id = await create(http, a, "demo-conversation")
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
    async with httpx.AsyncClient(headers=H, timeout=WAIT_S, limits=limits) as many:
        for turn in (1, 2, 3):
            await wait_for(http, b, run_id, ("waiting-approval",))
            snap = (await http.get(f"{a.url}/v1/runs/{run_id}")).json()
            data = snap["interrupt"]["payload"]["data"]
            assert data["turnIndex"] == turn, snap["interrupt"]

            def named(turn: int, i: int, cid: str = data["conversationId"]) -> dict[str, Any]:
                """Half the answers name the turn by index, half by messageId."""
                return {"turnIndex": turn} if i % 2 else {"messageId": f"{cid}:{turn}:user"}

            replies = await asyncio.gather(
                *(
                    many.post(
                        f"{(a, b)[i % 2].url}/v1/runs/{run_id}/interrupts/chat",
                        json={"resumeValue": {"turn": {**named(turn, i), "content": f"turn {turn}, answer {i}"}}},
                    )
                    for i in range(8)
                )
            )
            codes = [(r.status_code, r.json().get("error"), r.json().get("message")) for r in replies]
            assert [c[0] for c in codes].count(200) == 1, codes
            for status, error, message in codes:
                if status == 200:
                    continue
                if turn == 3 and status == 400:
                    # Read after the winner's answer closed the conversation (turnCount 3): RFC 0005 §E.
                    assert error == "validation_error" and "closed" in message, codes
                else:
                    assert (status, error) == (409, "interrupt_already_resolved"), codes
            assert next(r for r in replies if r.status_code == 200).json()["turnIndex"] == turn
    await wait_for(http, a, run_id, ("completed",))
    exchanged = [d["payload"] for d in await events(http, b, run_id) if d["type"] == "conversation.exchanged"]
    assert [e["turnIndex"] for e in exchanged] == [1, 2, 3]
    assert [e["turn"]["content"].split(",")[0] for e in exchanged] == ["turn 1", "turn 2", "turn 3"]
