"""The executor: drives one run while this instance holds its lease.

It starts ready nodes as tasks, waits for any to settle (or for a wake-up: a
resolution, a cancel, a child ending), turns their outcomes into events and a
new state, and commits that as one transaction fenced by its ``epoch``. When
every live branch is suspended it releases the run — only if nothing woke it
meanwhile — and exits: a suspended run holds no coroutine, no task, no memory.

A new run is primed (:meth:`RunExecutor.prime`) with its record and first events: its
first commit inserts it, so creating a run and running it until its first
suspension (or its end) is one transaction; a run an answer resumes hands its
first commit to that answer (both in :mod:`openwop_bridge.runtime.first_commit`). A
node still busy after ``FLUSH_AFTER_S`` does not hold that up: what is done is
committed then, and the node goes on.

Outcomes are applied by the executor's :class:`~openwop_bridge.runtime.step.Step`, the
only place the run's state changes after a node settles, which also records how
the run ends; a node activation is started with the helpers of
:mod:`openwop_bridge.runtime.launch`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import Any

from openwop_bridge.core import run_state
from openwop_bridge.core.errors import StaleOwnerError
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.core.statuses import RunStatus
from openwop_bridge.core.workflow import WorkflowDefinition
from openwop_bridge.runtime import launch
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.eager import start_eagerly
from openwop_bridge.runtime.first_commit import FirstCommit
from openwop_bridge.runtime.kernel import ExecutorHost
from openwop_bridge.runtime.outcome import Outcome, run_node
from openwop_bridge.runtime.step import Step
from openwop_bridge.runtime.wake import Wake, settle_once
from openwop_bridge.store.base import ChildStart, RunCommit

log = logging.getLogger("openwop_bridge.runtime.executor")

CANCEL_GRACE_S = 5.0
FLUSH_AFTER_S = 0.05


class RunExecutor:
    """Owns one run in this process; see the module docstring."""

    def __init__(self, engine: ExecutorHost, run_id: str, first: FirstCommit | None = None) -> None:
        """Drive ``run_id`` for ``engine``; ``first``: what its first commit carries besides its step (a new run
        to insert, an answer in flight), if anything."""
        self.engine = engine
        self.store = engine.store
        self.run_id = run_id
        self.run: RunRecord | None = None
        self.workflow: WorkflowDefinition
        self.state: dict[str, Any] = {}
        self.tasks: dict[asyncio.Future[Outcome], NodeContext] = {}
        self._wake = Wake()
        self._wake_seen = -1
        self._recheck = False
        self._claimed: RunRecord | None = None
        self._lock = asyncio.Lock()
        self.step = Step(engine.clock)
        self._rerun: dict[str, list[InterruptRecord]] = {}
        self._cancel: dict[str, Any] | None = None
        self.default_threshold = engine.default_threshold
        self.conversation_enabled = engine.conversation_enabled
        self.separation_of_duties = engine.separation_of_duties
        self._transient: tuple[type[BaseException], ...] = engine.store.transient_errors
        #: What the first commit carries besides its step (a new run, an answer in flight).
        self.first = first or FirstCommit(engine.store)
        #: The interrupts of the node an answer resumes, when they are known without reading them.
        self._read_ahead: tuple[str, list[InterruptRecord]] | None = None

    # --- ContextHost ---------------------------------------------------------------

    def clock_now_ms(self) -> int:
        return self.engine.clock.now_ms()

    def requesters_spec(self) -> Mapping[str, Any]:
        assert self.run is not None
        return self.run.spec

    def new_id(self, prefix: str) -> str:
        return self.engine.clock.new_id(prefix)

    async def find_key(self, key: str) -> InterruptRecord | None:
        # The answer in flight, not yet committed (see joint.py), or the store's.
        return self.first.settled_key(key) or await self.store.interrupt_by_key(self.run_id, key)

    @property
    def _source_run(self) -> str | None:
        assert self.run is not None
        return self.run.spec.get("replayOf")

    async def source_interrupt(self, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        source = self._source_run
        if source is None:
            return None
        return await self.store.interrupt_at_slot(source, exec_node, visit, ordinal)

    async def source_history(self, exec_node: str, visit: int) -> list[dict[str, Any]]:
        source = self._source_run
        return [] if source is None else await self.store.activation_events(source, exec_node, visit)

    async def exchange_answers(self, exec_node: str, conversation_id: str) -> list[tuple[str, Any]]:
        return await self.store.exchange_answers(self.run_id, exec_node, conversation_id)

    async def flush(self, ctx: NodeContext) -> None:
        async with self._lock:
            self.step.take(self.state, ctx)
            await self._commit()

    async def start_child(self, ctx: NodeContext, workflow_id: str, inputs: Mapping[str, Any], ordinal: int) -> str:
        existing = await self.engine.find_child(self.run_id, ctx.node_id, ctx.visit, ordinal)
        if existing is not None:
            return existing
        async with self._lock:
            assert self.run is not None
            child, events = self.engine.prepare_child(self.run, ctx, workflow_id, inputs, ordinal)
            self.step.children.append(ChildStart(child, events))
            self.step.take(self.state, ctx)
            await self._commit()
        self.engine.dispatch(child.run_id)
        return child.run_id

    async def child_status(self, run_id: str) -> tuple[str, dict[str, Any]]:
        child = await self.store.load_run(run_id)
        if child is None:
            return "failed", {"error": {"code": "run_not_found", "message": f"child run {run_id} is missing"}}
        return child.status, {
            "runId": child.run_id,
            "variables": child.state.get("variables", {}),
            "outputs": child.state.get("outputs", {}),
            "error": child.state.get("error"),
        }

    # --- lifecycle -----------------------------------------------------------------

    def notify(self) -> None:
        """Something changed for this run (a resolution, a cancel, a child ended)."""
        self._wake.set()

    async def drive(self, run: RunRecord, workflow: WorkflowDefinition) -> None:
        """Run until the run ends or every live branch is suspended.

        ``run`` comes straight from the transaction that leased it here, so the
        first look at the run's inputs starts from it instead of reading it again.
        """
        self.run = run
        self._claimed = run
        self.workflow = workflow
        self.state = run.state
        for node_id, ns in self.state["nodes"].items():
            if ns.get("status") == "running":
                # Its activation died with the instance that ran it (a crash, a lost lease):
                # run it again in the same visit; replay keeps what it already recorded.
                self._rerun.setdefault(node_id, [])
        try:
            await self._drive()
        except StaleOwnerError:
            log.warning("run %s was taken over by another executor; stopping here", self.run_id)
            await self._stop_tasks()
        except asyncio.CancelledError:
            await self._stop_tasks()
            raise
        except Exception as exc:
            if self.first.uncreated:
                # The run was never created: its caller hears why, and there is nothing to fail.
                await self._stop_tasks()
                return
            if isinstance(exc, self._transient):
                # The store is unreachable, not the run broken: stop here; the lease runs
                # out unrenewed and recovery resumes the run from its last commit.
                log.warning("run %s: the store is unavailable (%s); leaving it to recovery", self.run_id, exc)
                await self._stop_tasks()
                return
            log.exception("executor for run %s crashed", self.run_id)
            await self._stop_tasks()
            await self._fail_internally()
        finally:
            self.first.abandon()  # stopped before the run's first commit was sent

    async def _drive(self) -> None:
        while True:
            if self._wake.is_set():
                self._wake.clear()
                await self._absorb()
            if self._cancel is not None:
                await self._cancel_run()
                return
            if self.step.ending:
                await self._stop_tasks()
                await self._finish()
                return
            await self._start_ready()
            if not self.tasks:
                if self._recheck:
                    self._recheck = False
                    self._wake.set()
                    continue
                if not run_state.suspended_nodes(self.state):
                    await self._finish()
                    return
                async with self._lock:
                    released = await self._commit(release=True)
                if released:
                    return
                continue
            await self._wait()

    async def _wait(self) -> None:
        """Take the nodes that settled, once one has (or a wake-up came, or the flush time passed)."""
        if not (self._wake.is_set() or any(task.done() for task in self.tasks)):
            await self._until_settled()
        finished = [t for t in self.tasks if t.done()]
        async with self._lock:
            if finished:
                outcomes = []
                for task in finished:
                    self.tasks.pop(task)
                    outcomes.append(task.result())
                self.step.apply(self.state, self.workflow, outcomes, self._source_run or self.run_id)
            # Commit now only while other branches keep running; otherwise the
            # drive loop folds these events into its release or final commit.
            if self.tasks and self.step.events and (finished or not self._wake.is_set()):
                await self._commit()

    async def _until_settled(self) -> None:
        """Wait until a node settles, a wake-up, or (with events to commit) ``FLUSH_AFTER_S``."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        settle = functools.partial(settle_once, waiter)
        tasks = list(self.tasks)
        for task in tasks:
            task.add_done_callback(settle)
        timer = loop.call_later(FLUSH_AFTER_S, settle) if self.step.events else None
        self._wake.waiter = waiter
        try:
            await waiter
        finally:
            self._wake.waiter = None
            for task in tasks:
                task.remove_done_callback(settle)
            if timer is not None:
                timer.cancel()

    async def _stop_tasks(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks.clear()

    # --- inputs from outside ----------------------------------------------------------

    async def _absorb(self) -> None:
        # Woken again before the answer that leased the run here committed: read after it.
        await self.first.before_answer(self._claimed is not None)
        if self.first.create is not None:
            # Not inserted yet: nothing outside can have changed it.
            self._claimed = self._claimed or self.run
        # The first look at a run an answer in flight resumes reads no interrupts (see FirstCommit.resumed).
        resumed = self.first.resumed(self.state) if self._claimed is not None else None
        run, self._claimed = self._claimed or await self.store.load_run(self.run_id), None
        if run is None:
            raise StaleOwnerError(f"run {self.run_id} disappeared")
        if run.owner != self.engine.instance_id or (self.run is not None and run.epoch != self.run.epoch):
            raise StaleOwnerError(f"run {self.run_id} is owned elsewhere")
        self._wake_seen = run.wake
        if run.status == "cancelling" or (run.control or {}).get("cancel"):
            self._cancel = (run.control or {}).get("cancel") or {"reason": "cancelled"}
            return
        nodes = self.state["nodes"]
        running = {ctx.node_id for ctx in self.tasks.values()}
        # An answer (or a child's end) for a node that is running right now is not seen by
        # that activation, which may suspend on it again: look once more when it settles.
        self._recheck = bool(running)
        # A run its first commit has yet to insert has no interrupts in the store.
        if self.first.create is not None or resumed is not None:
            stored: list[InterruptRecord] = []
            if resumed and self.first.settled is not None:
                self._read_ahead = (self.first.settled.exec_node, resumed)
        else:
            stored = await self.store.unconsumed(self.run_id)
        for rec in self.first.overlaid(stored):
            ns = nodes.get(rec.exec_node)
            if ns is None or rec.exec_node in running:
                continue
            waits = {w["id"] for w in ns.get("waits", [])}
            if ns.get("status") == "suspended" and ns.get("visit") == rec.visit and rec.interrupt_id in waits:
                self._rerun.setdefault(rec.exec_node, []).append(rec)
            elif ns.get("status") != "suspended":
                self.step.consume.append(rec.interrupt_id)
        for node_id, ns in nodes.items():
            if ns.get("status") != "suspended" or node_id in running or node_id in self._rerun:
                continue
            for wait in ns.get("waits", []):
                if wait.get("child"):
                    child = await self.store.load_run(wait["child"])
                    if child is None or child.terminal:
                        self._rerun[node_id] = []
                        break

    # --- starting nodes ---------------------------------------------------------------

    async def _start_ready(self) -> None:
        assert self.run is not None
        ready = list(self.state.get("ready", []))
        self.state["ready"] = []
        # Every activation is set up (its events drafted, its history read) before any node's code runs.
        started = [await self._start(node_id, resumed=[]) for node_id in ready]
        reruns, self._rerun = self._rerun, {}
        started += [await self._start(node_id, resumed=records) for node_id, records in reruns.items()]
        for ctx in started:
            self._launch(ctx)

    async def _start(
        self, node_id: str, *, resumed: list[InterruptRecord] | None, cancelling: bool = False
    ) -> NodeContext:
        """Set up a node's activation (a start, a resume, or a replay to cancel); returns its context."""
        assert self.run is not None
        now = self.clock_now_ms()
        ns, fresh, drafts = launch.activate(
            self.state, self.workflow, node_id, resumed=resumed, cancelling=cancelling, now=now, draft=self.step.draft
        )
        self.step.events.extend(drafts)
        known = []
        node_type = self.engine.node_types.get(self.workflow.nodes[node_id].type_id)
        lazy = node_type is not None and node_type.resumes_at_last_request
        read_ahead, self._read_ahead = self._read_ahead, None
        if not lazy and (not fresh or ns.get("ints", 0) > ns.get("intBase", 0)):
            ahead = read_ahead[1] if read_ahead is not None and read_ahead[0] == node_id else None
            known = await launch.known_interrupts(self.store, self.run_id, node_id, self.step.consume, ahead)
            known = self.first.replaced(known, node_id)
        history, once = await launch.recorded_history(self.store, self.run_id, node_id, ns, self._source_run)
        ctx = launch.node_context(
            self,
            self.run,
            self.state,
            node_id,
            ns,
            now,
            known=known,
            history=history,
            once=once,
            cancelling=cancelling,
            replaying_fork=self._source_run is not None,
            known_complete=not lazy,
        )
        return ctx

    def _launch(self, ctx: NodeContext) -> None:
        """Run the activation ``ctx`` as a task (one whose type allows starts it in this turn)."""
        node_type = self.engine.node_types.get(ctx.node.type_id)
        name = f"node:{self.run_id}:{ctx.node_id}"
        if node_type is not None and node_type.starts_at_once:
            self.tasks[start_eagerly(self._execute(ctx), name)] = ctx
        else:
            self.tasks[asyncio.create_task(self._execute(ctx), name=name)] = ctx

    async def _execute(self, ctx: NodeContext) -> Outcome:
        node_type = self.engine.node_types.get(ctx.node.type_id)
        try:
            return await run_node(node_type, ctx, self.engine.clock.now_ms, self._transient)
        finally:
            # Ends the drive loop's wait at once: the task is done by the time the loop looks, a turn
            # before the done callback :meth:`_wait` adds to it would end the wait.
            settle_once(self._wake.waiter)

    # --- committing -------------------------------------------------------------------

    async def _commit(
        self,
        *,
        release: bool = False,
        status: RunStatus | None = None,
        terminal: bool = False,
        wake_run: str | None = None,
    ) -> bool:
        assert self.run is not None
        self.step.check_limit(self.state, run_state.execution_limit(self.run.spec, self.engine.max_node_executions))
        self.state["currentNodeId"] = None if terminal else run_state.current_node(self.state)
        events, new_interrupts, consume, close, children = self.step.drain()
        create = self.first.take_create()
        commit = RunCommit(
            run_id=self.run_id,
            owner=self.engine.instance_id,
            epoch=self.run.epoch,
            now_ms=self.clock_now_ms(),
            events=events,
            state=self.state,
            status=status or run_state.run_status(self.state, busy=bool(self.tasks)),
            new_interrupts=new_interrupts,
            consume=consume,
            close_interrupts=close,
            children=children,
            wake_run=wake_run,
            parent_run_id=self.run.parent_run_id,
            release_if_wake=self._wake_seen if release else None,
            terminal=terminal,
            create=create,
            run=self.run,
        )
        if wake_run is not None:
            # The run it wakes may be taking an answer with the step it woke: that goes first.
            await self.engine.joint_settled(wake_run)
        result = await self.first.send(commit)
        self.run.status = commit.status or self.run.status
        self.engine.after_commit(self.run, commit, result)
        if release and not result.released:
            self._wake.set()
        return result.released

    async def _finish(self) -> None:
        assert self.run is not None
        async with self._lock:
            duration = max(self.clock_now_ms() - self.run.created_at_ms, 0)
            status = self.step.end(self.state, self.workflow, duration)
            await self._commit(status=status, terminal=True, wake_run=self.run.parent_run_id)

    async def _cancel_run(self) -> None:
        """Cancel: stop running nodes, let suspended ones see InterruptCancelledError, end."""
        assert self.run is not None and self._cancel is not None
        await self._stop_tasks()
        for node_id in run_state.suspended_nodes(self.state):
            ctx = await self._start(node_id, resumed=[], cancelling=True)
            node_type = self.engine.node_types.get(ctx.node.type_id)
            self.step.events.extend(await launch.run_cancelling(node_type, ctx, CANCEL_GRACE_S))
        # Children, before this run's terminal commit: after a crash the run is still
        # cancelling and comes back here, so no child is left waiting.
        await self.engine.cancel_children(self.run_id)
        async with self._lock:
            self.step.cancel(self.state, self._cancel, max(self.clock_now_ms() - self.run.created_at_ms, 0))
            await self._commit(status="cancelled", terminal=True, wake_run=self.run.parent_run_id)

    async def _fail_internally(self) -> None:
        """Best effort after a defect: end the run failed rather than leave it running."""
        if self.run is None:
            return
        try:
            async with self._lock:
                self.step.fail_internally(self.state)
                await self._commit(status="failed", terminal=True, wake_run=self.run.parent_run_id)
        except Exception:
            log.exception("could not record the failure of run %s", self.run_id)
