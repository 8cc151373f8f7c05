"""A conversation turn reads and writes only that turn: its cost does not grow with the history.

Counted, not timed: the rows and bytes the engine reads from the store, and what each
commit carries, while one answer turns into the next prompt, at turn 3 and at turn 50.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from openwop_bridge import Engine, Workflow
from openwop_bridge.store.base import CommitResult, RunCommit
from tests.helpers import ADMIN, settle

TURNS = 50


@dataclass
class Tally:
    """What the store served and took while one turn was measured."""

    rows: int = 0
    read_bytes: int = 0
    commits: list[tuple[int, int]] = field(default_factory=list)  # (state bytes, event bytes) per commit

    def read(self, rows: Sequence[Sequence[Any]]) -> None:
        self.rows += len(rows)
        self.read_bytes += sum(len(v) for row in rows for v in row if isinstance(v, str | bytes))


def _instrument(engine: Engine) -> list[Tally | None]:
    """Count the engine's reads and commits into the current tally (when one is set)."""
    store: Any = engine.store
    current: list[Tally | None] = [None]
    one, all_, commit = store._one, store._all, store.commit

    async def counted_one(sql: str, args: Sequence[Any] = ()) -> Any:
        row = await one(sql, args)
        if current[0] is not None and row is not None:
            current[0].read([row])
        return row

    async def counted_all(sql: str, args: Sequence[Any] = ()) -> Any:
        rows = await all_(sql, args)
        if current[0] is not None:
            current[0].read(rows)
        return rows

    def carried(c: RunCommit) -> None:
        if current[0] is not None:
            events = sum(len(orjson.dumps(e.payload)) for e in c.events)
            current[0].commits.append((len(orjson.dumps(c.state)), events))

    async def counted_commit(c: RunCommit) -> CommitResult:
        carried(c)
        return await commit(c)

    answer_and_step = store.answer_and_step

    async def counted_answer_and_step(*args: Any) -> Any:
        step: RunCommit | None = args[-1]
        if step is not None:  # an answer and the step it woke, in one transaction
            carried(step)
        return await answer_and_step(*args)

    store._one, store._all, store.commit = counted_one, counted_all, counted_commit
    store.answer_and_step = counted_answer_and_step
    return current


async def _turn(engine: Engine, run_id: str, answer: str, tally: Tally | None, current: list[Tally | None]) -> None:
    """Answer the open exchange and wait, without reading the store, until the run waits or ends again."""
    moved: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_events(rid: str, docs: list[dict[str, Any]]) -> None:
        wanted = ("node.suspended", "run.completed", "run.failed")
        if rid == run_id and any(d["type"] in wanted for d in docs) and not moved.done():
            moved.set_result(None)

    engine.hub.add_listener(on_events)  # one per turn; each is done once its future is
    current[0] = tally
    try:
        await engine.resolve(ADMIN, answer, run_id=run_id, node_id="talk")
        await asyncio.wait_for(moved, 10)
        while run_id in engine._executors:
            await asyncio.sleep(0.001)
    finally:
        current[0] = None


async def test_a_late_turn_reads_and_writes_no_more_than_an_early_one(engine: Engine) -> None:
    wf = Workflow("long-chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hi.", "turnCount": TURNS})
    wf.register(engine)
    current = _instrument(engine)
    run = await engine.create_run(ADMIN, "long-chat")
    await settle(engine, run.run_id)
    early, late = Tally(), Tally()
    for turn in range(1, TURNS):
        tally = early if turn == 3 else late if turn == TURNS - 1 else None
        await _turn(engine, run.run_id, f"answer {turn:03d}", tally, current)
    assert early.rows > 0 and early.commits, "the early turn was not measured"
    assert late.rows <= early.rows, (early, late)
    assert late.read_bytes <= early.read_bytes * 1.05, (early, late)
    assert len(late.commits) == len(early.commits), (early, late)
    for (early_state, early_events), (late_state, late_events) in zip(early.commits, late.commits, strict=True):
        assert late_state <= early_state * 1.05 and late_events <= early_events * 1.05, (early, late)
    await _turn(engine, run.run_id, f"answer {TURNS:03d}", None, current)
    done = await engine.store.load_run(run.run_id)
    assert done is not None and done.status == "completed"
    replies = done.state["outputs"]["talk"]["outcome"]["replies"]
    assert replies == [f"answer {t:03d}" for t in range(1, TURNS + 1)]


async def test_the_closing_turn_reads_back_answers_of_every_json_type(engine: Engine) -> None:
    answers: list[Any] = ["text", {"a": [1, None]}, [1, "two"], True, False, 7, 3.5]
    wf = Workflow("typed-chat")
    wf.node("talk", type_id="core.conversationGate", config={"turnCount": len(answers)})
    wf.register(engine)
    run = await engine.create_run(ADMIN, "typed-chat")
    await settle(engine, run.run_id)
    for value in answers:
        await engine.resolve(ADMIN, {"content": value}, run_id=run.run_id, node_id="talk")
        await settle(engine, run.run_id)
    done = await engine.store.load_run(run.run_id)
    assert done is not None and done.status == "completed"
    assert done.state["outputs"]["talk"]["outcome"] == {"replies": answers}
    assert done.state["outputs"]["talk"]["turns"] == len(answers)
