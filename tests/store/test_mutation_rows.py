"""A mutation's result holds the rows exactly as the store now holds them.

The store does not read back the rows a decision changed (it locked and read
them, so it knows what its ``UPDATE`` makes of them): these tests read them
again and compare, on both stores, for every shape of decision.
"""

from __future__ import annotations

from typing import Any

import pytest

from openwop_bridge.core.records import InterruptRecord, Mutation, RunRecord
from openwop_bridge.store.base import Claim, RunCommit, Store
from tests.store.test_store_contract import LEASE, draft, resolve, store, with_interrupts

__all__ = ["store"]  # the fixture, parametrised over SQLite and PostgreSQL


async def _released(store: Store, *specs: dict[str, Any]) -> tuple[RunRecord, list[InterruptRecord]]:
    """A run waiting on ``specs``, released by its executor."""
    run, records = await with_interrupts(store, *specs)
    own = await store.load_run(run.run_id)
    assert own is not None
    await store.commit(RunCommit(run.run_id, "A", own.epoch, 3_500, release_if_wake=own.wake))
    return run, records


async def _same_as_stored(store: Store, run: RunRecord | None, intr: InterruptRecord | None) -> None:
    assert run is not None
    assert run == await store.load_run(run.run_id)
    if intr is not None:
        assert intr == await store.get_interrupt(intr.interrupt_id)


@pytest.mark.parametrize("claim", [None, Claim("B", LEASE)], ids=["no-claim", "claim"])
async def test_an_answer_returns_the_rows_it_left(store: Store, claim: Claim | None) -> None:
    _, (gate,) = await _released(store, {"node_id": "gate"})
    result = await store.mutate_interrupt(resolve(), 4_000, interrupt_id=gate.interrupt_id, claim=claim)
    assert result.claimed == (claim is not None)
    await _same_as_stored(store, result.run, result.interrupt)
    assert result.interrupt is not None and result.interrupt.resolution == {"resumeValue": {"action": "accept"}}


async def test_state_events_and_control_return_the_rows_they_left(store: Store) -> None:
    run, (gate,) = await _released(store, {"node_id": "gate"})

    def vote(intr: InterruptRecord, _: RunRecord) -> Mutation:
        return Mutation(
            interrupt_state={"votes": [{"by": "ann", "value": 1.5}], "empty": {}},
            events=[draft("interrupt.voted", node=intr.node_id)],
            control={},
            result={"status": "pending"},
        )

    result = await store.mutate_interrupt(vote, 4_000, run_id=run.run_id, node_id="gate")
    await _same_as_stored(store, result.run, result.interrupt)

    def events_only(intr: InterruptRecord, _: RunRecord) -> Mutation:
        return Mutation(events=[draft("interrupt.viewed", node=intr.node_id)])

    result = await store.mutate_interrupt(events_only, 4_100, interrupt_id=gate.interrupt_id)
    await _same_as_stored(store, result.run, result.interrupt)


async def test_a_cancel_returns_the_rows_it_left(store: Store) -> None:
    run, _ = await _released(store, {"node_id": "a"}, {"node_id": "b"})

    def cancel(r: RunRecord, open_ones: list[InterruptRecord]) -> Mutation:
        return Mutation(
            run_status="cancelling",
            cancel_interrupts="cancelled",
            control={"cancel": {"reason": "because", "by": None}},
            events=[draft("run.cancelling")],
            wake=True,
        )

    result = await store.mutate_run(run.run_id, cancel, 9_000, claim=Claim("B", LEASE))
    assert result.claimed
    await _same_as_stored(store, result.run, None)
