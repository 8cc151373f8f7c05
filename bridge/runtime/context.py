"""``NodeContext``: what node code sees, and the ``interrupt`` primitive itself.

A node that must wait does not keep a coroutine alive: ``interrupt`` records
the request and *unwinds* the node (with :class:`Suspend`, a ``BaseException``
so ordinary ``except Exception`` blocks do not swallow it). When the answer is
committed, the node runs again from its top. Every ``interrupt`` call before
the current one finds its key already resolved and returns the persisted value
at once, without a new ``interrupt.requested``; events the node emitted before
are recognised by their place in the node's command history
(:mod:`openwop_bridge.runtime.commands`) and not emitted twice. Recovery after a crash
is the same path.

Node code gets time, ids and side effects only through this object
(``ctx.now_ms``, ``ctx.step``) so that re-execution gives the same answers.
How a request finds its identity, and a replay fork its source's answer, is in
:mod:`openwop_bridge.runtime.requests`.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from openwop_bridge.core import kinds
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.core.workflow import NodeSpec, WorkflowDefinition, thaw
from openwop_bridge.runtime.activation import Activation, InterruptHandle, Suspend
from openwop_bridge.runtime.commands import Commands
from openwop_bridge.runtime.requests import Instant, InterruptRequests, RequestHost

if TYPE_CHECKING:
    from openwop_bridge.runtime.conversation import Conversation

log = logging.getLogger("openwop_bridge.node")

STEP_EVENT = "bridge.step.recorded"


class ContextHost(RequestHost, Protocol):
    """What a context needs from the executor that created it."""

    default_threshold: float
    workflow: WorkflowDefinition

    async def source_history(self, exec_node: str, visit: int) -> list[dict[str, Any]]:
        """In a replay fork: the source run's command events of this activation."""

    async def flush(self, ctx: NodeContext) -> None:
        """Commit what the node has emitted so far (before a long wait)."""

    async def start_child(self, ctx: NodeContext, workflow_id: str, inputs: Mapping[str, Any], ordinal: int) -> str:
        """Create (once) a child run; returns its id."""

    async def child_status(self, run_id: str) -> tuple[str, dict[str, Any]]:
        """A child run's status and snapshot summary."""

    async def exchange_answers(self, exec_node: str, conversation_id: str) -> list[tuple[str, Any]]:
        """``(key, answer)`` of each committed answer to the node's conversation, in turn order."""


class NodeContext:
    """The runtime handed to node code (``async def run(ctx) -> dict``)."""

    def __init__(
        self,
        host: ContextHost,
        *,
        run_id: str,
        tenant: str,
        workflow_id: str,
        node: NodeSpec,
        visit: int,
        int_base: int,
        child_base: int,
        inputs: Mapping[str, Any],
        variables: Mapping[str, Any],
        configurable: Mapping[str, Any],
        known: Sequence[InterruptRecord],
        history: Sequence[dict[str, Any]],
        started_at_ms: int,
        once_history: Sequence[dict[str, Any]] = (),
        replaying_fork: bool,
        cancelling: bool = False,
        upstream: Mapping[str, Mapping[str, Any]] | None = None,
        requested: int = 0,
        known_complete: bool = True,
    ) -> None:
        self._host = host
        self.run_id = run_id
        self.tenant = tenant
        self.workflow_id = workflow_id
        self.node = node
        self.node_id = node.id
        self.visit = visit
        self.inputs = dict(inputs)
        self.variables: dict[str, Any] = dict(variables)
        self.configurable = dict(configurable)
        self.config: dict[str, Any] = thaw(node.config)
        self.started_at_ms = started_at_ms
        self.cancelling = cancelling
        #: Status, outputs and error of the nodes feeding this one (by node id).
        self.upstream: dict[str, Mapping[str, Any]] = dict(upstream or {})
        #: How many requests the earlier activations of this visit made (their places are 0 … requested - 1).
        self.requested = requested
        self._child_base = child_base
        self.activation = Activation()
        self._commands = Commands(host, self.activation, node.id, visit, history, once_history)
        self._requests = InterruptRequests(
            host,
            self.activation,
            self._commands.draft,
            run_id=run_id,
            tenant=tenant,
            workflow_id=workflow_id,
            node_id=node.id,
            visit=visit,
            int_base=int_base,
            known=known,
            replaying_fork=replaying_fork,
            cancelling=cancelling,
            complete=known_complete,
        )

    # --- identity ----------------------------------------------------------------

    @property
    def agent_id(self) -> str:
        """The agent this node speaks for: ``config.agentId``, the node's agent pin, or a host id."""
        configured = self.config.get("agentId")
        if isinstance(configured, str) and len(configured) >= 3:
            return configured
        if self.node.agent and isinstance(self.node.agent.get("agentId"), str):
            return str(self.node.agent["agentId"])
        return f"host:agent:{self.node_id}"

    def new_id(self, prefix: str) -> str:
        """A new unique id (event ids, conversation ids)."""
        return self._host.new_id(prefix)

    @property
    def workflow(self) -> WorkflowDefinition:
        """The workflow this node belongs to."""
        return self._host.workflow

    def now_ms(self) -> int:
        """The current time (use :meth:`step` when the value must survive re-execution)."""
        return self._host.clock_now_ms()

    # --- events ------------------------------------------------------------------

    def emit(self, type_: str, payload: Any) -> None:
        """Emit a node event (e.g. ``agent.reasoned`` or a vendor ``acme.thing.done``).

        On re-execution an event already in the node's history is not emitted again.
        """
        self._commands.emit(type_, payload)

    def emit_once(self, type_: str, payload: dict[str, Any], key: str) -> bool:
        """Emit an event identified by ``key`` at most once per activation, wherever it comes.

        For node code whose order of events is not the same on every execution
        (it follows outside state, like a LangGraph checkpoint). Returns True when
        the event was emitted now.
        """
        return self._commands.emit_once(type_, payload, key)

    def known_interrupts(self) -> list[InterruptRecord]:
        """Interrupts this node raised earlier in the run (as loaded for this execution)."""
        return self._requests.known()

    async def lookup_key(self, key: str) -> InterruptRecord | None:
        """The interrupt of this run with ``key``, if one was raised."""
        return await self._requests.lookup_key(key)

    def log(self, level: str, message: str, **fields: Any) -> None:
        """Log through the run: ``warn``/``error`` also become ``log.appended`` events.

        A warning already in the node's history (the node is being re-executed)
        is neither logged nor emitted again.
        """
        durable = level in ("warn", "error")
        if not (durable and self._commands.replaying):
            getattr(log, {"warn": "warning"}.get(level, level), log.info)(
                "%s", message, extra={"runId": self.run_id, "nodeId": self.node_id}
            )
        if durable:
            self.emit("log.appended", {"level": level, "message": message, "nodeId": self.node_id, "fields": fields})

    def set_variable(self, name: str, value: Any) -> None:
        """Change a run variable; recorded as ``variable.changed``."""
        previous = self.variables.get(name)
        self.variables[name] = value
        self.activation.variables[name] = value
        self.emit("variable.changed", {"name": name, "previous": previous, "next": value, "nodeId": self.node_id})

    async def step(self, name: str, fn: Callable[[], Awaitable[Any]] | Callable[[], Any]) -> Any:
        """Run a side effect once per activation and record its JSON result.

        On re-execution the recorded result is returned and ``fn`` is not called:
        use this for model calls, HTTP requests, random choices and clock reads.
        """
        recorded = self._commands.recorded(STEP_EVENT)
        if recorded is not None:
            return recorded["payload"].get("result")
        value = fn()
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value
        self._commands.record(STEP_EVENT, {"nodeId": self.node_id, "name": name, "result": value})
        return value

    def say(self, text: str, *, message_id: str | None = None) -> str:
        """Say something to the people following the run (an ``output.chunk``, whole).

        Returns the message id; the AG-UI adapter streams it as assistant text.
        """
        return self.stream_text([text], message_id=message_id)

    def stream_text(self, chunks: Sequence[str], *, message_id: str | None = None) -> str:
        """Emit one assistant message as several ``output.chunk`` events (the last has ``isLast``)."""
        mid = message_id or f"msg:{self.run_id}:{self.node_id}:{self.visit}:{self._commands.position}"
        parts = list(chunks) or [""]
        for i, chunk in enumerate(parts):
            self.emit(
                "output.chunk",
                {
                    "nodeId": self.node_id,
                    "runId": self.run_id,
                    "chunk": chunk,
                    "isLast": i == len(parts) - 1,
                    "channel": mid,
                },
            )
        return mid

    async def checkpoint(self) -> None:
        """Make everything emitted so far durable now (before a long operation)."""
        await self._host.flush(self)

    async def sleep(self, ms: int) -> None:
        """Wait until ``ms`` after this activation started (survives a restart)."""
        await self._host.flush(self)
        remaining = self.started_at_ms + ms - self._host.clock_now_ms()
        if remaining > 0:
            await asyncio.sleep(remaining / 1000)

    # --- interrupts --------------------------------------------------------------

    async def request(
        self,
        payload: Mapping[str, Any],
        *,
        address: str | None = None,
        extra: Mapping[str, Any] | None = None,
        instant: Instant | None = None,
    ) -> InterruptHandle:
        """Register an interrupt without suspending; return its handle.

        The key decides identity: a key already known to the run returns the
        existing interrupt (resolved or not) and emits nothing. ``address`` gives
        the interrupt its own ``nodeId`` (``<node>:<address>``) when one node holds
        several at once. ``extra`` adds fields to ``node.suspended``.
        """
        return await self._requests.request(payload, address=address, extra=extra, instant=instant)

    def peek_next(self) -> InterruptRecord | None:
        """The interrupt the next :meth:`request` of this activation will return, if it is loaded."""
        return self._requests.peek_next()

    async def next_recorded(self) -> InterruptRecord | None:
        """The interrupt the next :meth:`request` of this activation will return, if it exists."""
        return await self._requests.next_recorded()

    async def recorded_request(self, ordinal: int) -> InterruptRecord | None:
        """The interrupt this visit raised at request place ``ordinal``, if any."""
        return await self._requests.recorded_at(ordinal)

    def skip_requests(self, ordinal: int) -> None:
        """Go on at request place ``ordinal`` without making the earlier requests again.

        For node code that continues from its last turn (node types declared with
        ``resumes_at_last_request``); the answers of the skipped requests stay in the store.
        """
        self._requests.skip_to(ordinal)

    async def exchange_answers(self, conversation_id: str) -> list[tuple[str, Any]]:
        """``(key, answer)`` of each committed answer to this node's conversation, in turn order."""
        return await self._host.exchange_answers(self.node_id, conversation_id)

    async def source_for_next(self) -> InterruptRecord | None:
        """In a replay fork: the source run's interrupt at the next request's place."""
        return await self._requests.source_for_next()

    def next_interrupt_number(self) -> int:
        """The run-wide counter the next auto key of this node will use."""
        return self._requests.next_interrupt_number()

    def wait_any(self, handles: Sequence[InterruptHandle]) -> None:
        """Return if any handle is settled; otherwise suspend the node on all of them."""
        if not handles or any(h.settled for h in handles):
            return
        raise Suspend([h.interrupt_id for h in handles])

    async def interrupt(self, payload: Mapping[str, Any], *, address: str | None = None) -> Any:
        """Pause until the interrupt is resolved; return the validated resume value.

        Raises :class:`~openwop_bridge.core.errors.InterruptTimeoutError` when ``timeoutMs``
        elapses and :class:`~openwop_bridge.core.errors.InterruptCancelledError` when the
        interrupt or its run is cancelled.
        """
        handle = await self.request(payload, address=address)
        return handle.result()

    async def suspend(self, payload: Mapping[str, Any], *, address: str | None = None) -> Any:
        """Alias of :meth:`interrupt` accepting ``reason``/``resumeKey``/``answerSchema``."""
        return await self.interrupt(payload, address=address)

    # --- conversations and agents -------------------------------------------------

    async def conversation(
        self,
        *,
        title: str | None = None,
        initial_prompt: str | None = None,
        timeout_ms: int | None = None,
        channel: str | None = None,
        speaker_id: str | None = None,
        key: str | None = None,
        conversation_id: str | None = None,
    ) -> Conversation:
        """Open a multi-turn conversation (RFC 0005); see :class:`openwop_bridge.runtime.conversation.Conversation`."""
        from openwop_bridge.runtime.conversation import open_conversation

        return await open_conversation(
            self,
            title=title,
            initial_prompt=initial_prompt,
            timeout_ms=timeout_ms,
            channel=channel,
            speaker_id=speaker_id,
            key=key,
            conversation_id=conversation_id,
        )

    async def decide(
        self,
        decision: Any,
        *,
        confidence: float | None = None,
        agent_id: str | None = None,
        threshold: float | None = None,
        key: str | None = None,
    ) -> Any:
        """Report an agent decision; escalate to a person when confidence is below threshold.

        Emits ``agent.decided``. Below the threshold (argument, else the run's
        ``configurable.escalationThreshold``, else the host default 0.7) it raises a
        ``low-confidence`` interrupt and returns the operator-ratified decision.
        Equal to the threshold continues; a missing confidence is no signal; a
        non-finite or out-of-range one is logged and never escalates.
        """
        agent = agent_id or self.agent_id
        usable = kinds.finite_confidence(confidence)
        payload: dict[str, Any] = {"agentId": agent, "decision": decision}
        if usable is not None:
            payload["confidence"] = usable
        self.emit("agent.decided", payload)
        if confidence is not None and usable is None:
            shown = (
                confidence if isinstance(confidence, int | float) and not math.isnan(confidence) else str(confidence)
            )
            self.log("warn", "agent reported an unusable confidence; not escalating", agentId=agent, confidence=shown)
            return decision
        if usable is None:
            return decision
        limit = self.escalation_threshold(threshold)
        if usable >= limit:
            return decision
        data = {"agentId": agent, "threshold": limit, "observed": usable, "decision": decision}
        request = kinds.LOW_CONFIDENCE.payload(data, key=key)
        handle = await self.request(request, extra={"agentId": agent, "threshold": limit, "observed": usable})
        return handle.result()

    def escalation_threshold(self, explicit: float | None = None) -> float:
        """The threshold in force: explicit, per-run, or the host default."""
        for candidate in (explicit, self.configurable.get("escalationThreshold")):
            value = kinds.finite_confidence(candidate)
            if value is not None:
                return value
        return self._host.default_threshold

    async def start_child(self, workflow_id: str, inputs: Mapping[str, Any] | None = None) -> str:
        """Start a child run of ``workflow_id`` (once per call site); return its id."""
        ordinal = self._child_base + self.activation.children
        self.activation.children += 1
        return await self._host.start_child(self, workflow_id, inputs or {}, ordinal)

    async def run_child(self, workflow_id: str, inputs: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start a child run (once) and wait for it to end; returns ``(status, summary)``."""
        return await self.wait_child(await self.start_child(workflow_id, inputs))

    async def wait_child(self, child_id: str) -> tuple[str, dict[str, Any]]:
        """Suspend until a child run has ended; returns ``(status, summary)``."""
        status, summary = await self._host.child_status(child_id)
        if status in ("completed", "failed", "cancelled"):
            return status, summary
        raise Suspend([f"child:{child_id}"])
