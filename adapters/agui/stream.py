"""The stream of one AG-UI request: the run's committed events as AG-UI frames, then how the run stands.

The stream follows the run's committed events (:meth:`openwop_bridge.Engine.follow`)
from where this AG-UI run began until the run is idle again: it then finishes
with the ``interrupt`` outcome (every open interrupt), ``success`` (with the
run's outputs) or ``cancelled``; a failed run ends with ``RUN_ERROR`` and its
OpenWOP code. A client older than 1.0 (``current`` false) gets a
``RUN_STARTED`` without a version and a cancelled run without an outcome.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    CustomEvent,
    Message,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
)
from ag_ui.encoder import EventEncoder

from openwop_bridge import BridgeError, Engine, InterruptRecord, RunRecord
from openwop_bridge.agui.mapping import interrupt_to_agui
from openwop_bridge.agui.messages import MessagesProjection
from openwop_bridge.agui.planning import Plan
from openwop_bridge.agui.translate import Translator, results_after_calls

log = logging.getLogger("openwop_bridge.agui")


@dataclass
class Settled:
    """The run as the stream's last check found it settled (ended, or waiting on ``interrupts``), if it did."""

    run: RunRecord | None = None
    interrupts: list[InterruptRecord] | None = None


class AguiStream:
    """The frames of AG-UI runs over one engine; ``poll_s`` is how long a quiet run is waited on before re-reading."""

    def __init__(self, engine: Engine, poll_s: float) -> None:
        self.engine = engine
        self.poll_s = poll_s

    async def events(self, agent_input: RunAgentInput, plan: Plan, *, current: bool) -> AsyncIterator[str]:
        """The AG-UI run as encoded frames: started, the run's events, then how it finished (or its error)."""
        encoder = EventEncoder()
        translator = Translator()
        thread_id, agui_run = agent_input.thread_id, agent_input.run_id
        version = PROTOCOL_VERSION if current else None
        yield encoder.encode(RunStartedEvent(thread_id=thread_id, run_id=agui_run, protocol_version=version))
        for warning in plan.warnings:
            yield encoder.encode(CustomEvent(name="openwop.warning", value=warning))
        try:
            # A stream from the run's first event (a run this request started) folds every event it
            # streams: no saved projection to read.
            fresh = plan.cursor < 0
            projection = (
                MessagesProjection(plan.run_id) if fresh else await MessagesProjection.load(self.engine, plan.run_id)
            )
            settled = Settled()
            async with aclosing(self._follow(plan, translator, encoder, projection, settled)) as frames:
                async for chunk in frames:
                    yield chunk
            run = settled.run or await self.engine.run_record(plan.run_id)
            assert run is not None
            ending = [encoder.encode(event) for event in translator.close()]
            ending += [
                chunk
                async for chunk in self._finish(agent_input, run, settled, plan.consumed, projection, encoder, current)
            ]
            yield "".join(ending)
        except Exception as exc:
            log.exception("AG-UI run %s of thread %s failed", agui_run, thread_id)
            for event in translator.close():
                yield encoder.encode(event)
            code = exc.code if isinstance(exc, BridgeError) else "internal_error"
            yield encoder.encode(RunErrorEvent(message="the run failed on the server; see its log", code=code))

    async def _follow(
        self,
        plan: Plan,
        translator: Translator,
        encoder: EventEncoder,
        projection: MessagesProjection,
        settled: Settled,
    ) -> AsyncGenerator[str]:
        """The run's events from the plan's cursor as AG-UI frames, until the run ends or waits.

        The run is followed the engine's one way (:meth:`openwop_bridge.Engine.follow`); the
        events of one batch go out as one write. The stream stops once every
        committed event is out and the run is terminal or idle with open interrupts;
        ``settled`` then holds the run and its open interrupts as that check read them.
        """
        cursor = plan.cursor
        async with aclosing(self.engine.follow(plan.run_id, plan.cursor, idle_s=self.poll_s)) as batches:
            async for docs in batches:
                frames: list[str] = []
                for doc in docs:
                    cursor = doc["sequence"]
                    projection.feed(doc)
                    frames.extend(encoder.encode(event) for event in translator.feed(doc))
                if frames:
                    yield "".join(frames)
                run = await self.engine.run_record(plan.run_id)
                if run is None or run.next_seq - 1 > cursor:
                    continue
                if run.terminal:
                    settled.run = run
                    return
                # A run that reads ``running`` is not waiting yet, even with its child's interrupt open: the
                # child's commit that opened it stores the parent's waiting status too, and a later read sees it.
                if run.status == "running" or run.needs_work:
                    continue
                if waiting := await self.engine.open_interrupts(plan.run_id):
                    settled.run, settled.interrupts = run, waiting
                    return

    async def _finish(
        self,
        agent_input: RunAgentInput,
        run: RunRecord,
        settled: Settled,
        consumed: set[str],
        projection: MessagesProjection,
        encoder: EventEncoder,
        current: bool,
    ) -> AsyncIterator[str]:
        thread_id, agui_run = agent_input.thread_id, agent_input.run_id
        if run.status == "failed":
            error = run.state.get("error") or {"code": "run_failed", "message": "the run failed"}
            yield encoder.encode(RunErrorEvent(message=str(error.get("message")), code=str(error.get("code"))))
            return
        state = {
            "openwop": {"runId": run.run_id, "workflowId": run.workflow_id, "status": run.status},
            "variables": {k: v for k, v in run.state.get("variables", {}).items() if k != "messages"},
        }
        yield encoder.encode(StateSnapshotEvent(snapshot=state))
        messages = await self._messages(agent_input, projection, consumed, run.next_seq - 1)
        yield encoder.encode(MessagesSnapshotEvent(messages=messages))
        if run.status == "completed":
            outcome: Any = RunFinishedSuccessOutcome()
            finished = RunFinishedEvent(
                thread_id=thread_id, run_id=agui_run, outcome=outcome, result=run.state.get("outputs", {})
            )
        elif run.status == "cancelled":
            # Clients before 1.0 know no cancelled outcome; the state snapshot above tells them.
            cancelled = RunFinishedCancelledOutcome() if current else None
            finished = RunFinishedEvent(thread_id=thread_id, run_id=agui_run, outcome=cancelled)
        else:
            waiting = settled.interrupts
            if waiting is None or settled.run is not run:
                waiting = await self.engine.open_interrupts(run.run_id)
            views = [self.engine.interrupt_view(r, link=None) for r in waiting]
            outcome = RunFinishedInterruptOutcome(interrupts=[interrupt_to_agui(v) for v in views])
            finished = RunFinishedEvent(thread_id=thread_id, run_id=agui_run, outcome=outcome)
        yield encoder.encode(finished)

    async def _messages(
        self, agent_input: RunAgentInput, projection: MessagesProjection, consumed: set[str], last_seq: int
    ) -> list[Message]:
        """The thread's messages: the client's earlier ones, then this run's, each id once.

        Messages the thread took as echoes (a turn's answer shown as a user
        message, a tool call's answer shown as its result) are left out, and each
        tool call has one result, after the call.
        """
        await projection.catch_up(self.engine, last_seq)
        await projection.save(self.engine)
        derived = projection.messages
        derived_ids = {m.id for m in derived}
        earlier = [m for m in agent_input.messages if m.id not in derived_ids and m.id not in consumed]
        return results_after_calls([*earlier, *derived])
