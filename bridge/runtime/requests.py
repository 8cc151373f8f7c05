"""The interrupt primitive's bookkeeping for one activation: the interrupts it knows and the ones it raises.

:class:`InterruptRequests` gives a request its identity (its key, else its place:
the visit and the ordinal of the call), returns an interrupt the run already
holds instead of raising it again, checks a re-execution against what was
recorded, and in a replay fork takes the source run's answer instead of asking
anyone. :class:`~openwop_bridge.runtime.context.NodeContext` exposes it as ``ctx.request``.

Most activations start with every interrupt their node raised so far (``known``,
complete). A node that continues from its last turn instead of making every
earlier request again (``complete=False``) starts with none: a request then
looks its place up by its automatic key, one indexed read, so an activation
reads only the requests it makes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypedDict

from openwop_bridge.core import kinds, separation
from openwop_bridge.core.decisions.exchange import REBUILT_KINDS, rebuilt_events
from openwop_bridge.core.errors import (
    CapabilityRefusedError,
    InterruptCancelledError,
    ReplayDivergedError,
    ValidationError,
)
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.runtime.activation import Activation, InterruptHandle

#: Answers an interrupt as it is raised: ``record -> (resolution, events)``.
Instant = Callable[[InterruptRecord], tuple[dict[str, Any], list[EventDraft]]]


class RequestOptions(TypedDict, total=False):
    """The options of :meth:`InterruptRequests.request` besides the payload."""

    address: str | None
    extra: Mapping[str, Any] | None
    instant: Instant | None


class RequestHost(Protocol):
    """What interrupt requests need from the executor running the activation."""

    conversation_enabled: bool
    #: Whether every approval separates duties unless it says otherwise (``serve --separation-of-duties``).
    separation_of_duties: bool

    def requesters_spec(self) -> Mapping[str, Any]:
        """The run's spec, which names who requested it (:func:`openwop_bridge.core.separation.requesters`)."""

    def clock_now_ms(self) -> int:
        """The current time in epoch milliseconds."""

    def new_id(self, prefix: str) -> str:
        """A new unique id."""

    async def find_key(self, key: str) -> InterruptRecord | None:
        """An interrupt of this run with ``key`` raised by another node, if any."""

    async def source_interrupt(self, exec_node: str, visit: int, ordinal: int) -> InterruptRecord | None:
        """In a replay fork: the source run's interrupt at the same place."""


class Drafter(Protocol):
    """Adds an event draft to the activation (the context's own drafting)."""

    def __call__(
        self, type_: str, payload: Any, *, node_id: str | None = None, causation: str | None = None
    ) -> EventDraft:
        """The new draft, already added to the activation."""


class InterruptRequests:
    """One activation's interrupts, by key and by place; see the module docstring."""

    def __init__(
        self,
        host: RequestHost,
        activation: Activation,
        draft: Drafter,
        *,
        run_id: str,
        tenant: str,
        workflow_id: str,
        node_id: str,
        visit: int,
        int_base: int,
        known: Sequence[InterruptRecord],
        replaying_fork: bool,
        cancelling: bool,
        complete: bool = True,
    ) -> None:
        self._host = host
        self.activation = activation
        self._draft = draft
        self.run_id = run_id
        self.tenant = tenant
        self.workflow_id = workflow_id
        self.node_id = node_id
        self.visit = visit
        self.cancelling = cancelling
        self._int_base = int_base
        self._by_key: dict[str, InterruptRecord] = {r.key: r for r in known}
        self._by_slot: dict[tuple[int, int], InterruptRecord] = {(r.visit, r.ordinal): r for r in known}
        self._replaying_fork = replaying_fork
        #: False when ``known`` is not every interrupt of the node: places are then read when asked for.
        self._complete = complete

    def known(self) -> list[InterruptRecord]:
        """Interrupts this node raised earlier in the run (as loaded for this execution)."""
        return list(self._by_key.values())

    async def lookup_key(self, key: str) -> InterruptRecord | None:
        """The interrupt of this run with ``key``, if one was raised."""
        return self._by_key.get(key) or await self._host.find_key(key)

    def _address(self, address: str | None) -> str:
        if address is None:
            return self.node_id
        if not address or any(c in address for c in "/?#% "):
            raise ValidationError("an interrupt address may not contain '/', '?', '#', '%' or spaces")
        return f"{self.node_id}:{address}"

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
        ordinal = self.activation.ordinals
        self.activation.ordinals += 1
        default_key = f"{self.run_id}:{self.node_id}:{self._int_base + ordinal}"
        slot = await self.recorded_at(ordinal)
        known_key = kinds.payload_key(payload, default_key)
        if slot is not None and slot.key == known_key and known_key in self._by_key:
            # Replaying a request this activation already made: the payload was checked
            # when it was first raised, and checking every earlier turn again on each
            # re-execution would make a long conversation slower with every turn.
            return self._known(self._by_key[known_key])
        p = kinds.normalize_payload(payload, default_key)
        if kinds.kind_of(p["kind"]).in_conversation and not self._host.conversation_enabled:
            raise CapabilityRefusedError(
                "conversationPrimitive",
                f"node {self.node_id!r} opened a conversation, which this host does not offer "
                "(declare it with conversation=True to have such workflows refused at run creation)",
            )
        if p["kind"] == kinds.APPROVAL.name:
            p = self._separated(p)
        key = p["key"]
        # Explicit keys carry their identity; the place check guards code that relies on order.
        if slot is not None and slot.key != key and key == default_key:
            raise ReplayDivergedError(
                f"node {self.node_id!r} asked for interrupt {key!r} where its history has {slot.key!r}",
                details={"nodeId": self.node_id, "ordinal": ordinal},
            )
        record = self._by_key.get(key)
        if record is None and key != default_key:
            record = await self._host.find_key(key)
        if record is None and self._replaying_fork:
            record = await self._replay_from_source(p, ordinal, address, extra)
        if record is None and self.cancelling:
            raise InterruptCancelledError("the run is being cancelled", reason="run-cancelled")
        if record is not None:
            return self._known(record)
        return InterruptHandle(self._new_record(p, ordinal, address, extra, instant))

    def _separated(self, p: dict[str, Any]) -> dict[str, Any]:
        """The approval with the host's separation of duties stamped on (unless it says), refused when the run's
        requesters are all its approvers could be."""
        data = p["data"]
        if self._host.separation_of_duties and separation.FIELD not in data:
            p = {**p, "data": {**data, separation.FIELD: True}}
        problem = separation.opening_problem(p["data"], self._host.requesters_spec())
        if problem is not None:
            raise ValidationError("invalid approval interrupt payload: " + problem, details={"problems": [problem]})
        return p

    def _known(self, record: InterruptRecord) -> InterruptHandle:
        """The handle of an interrupt the run already holds (marking a settled one consumed)."""
        if not record.open and not record.consumed:
            self.activation.consumed.append(record.interrupt_id)
            record.consumed = True  # taken now; the next commit records it
        return InterruptHandle(record)

    def _new_record(
        self,
        p: dict[str, Any],
        ordinal: int,
        address: str | None,
        extra: Mapping[str, Any] | None,
        instant: Instant | None,
        *,
        copied_from: InterruptRecord | None = None,
    ) -> InterruptRecord:
        now = self._host.clock_now_ms()
        wire_node = self._address(address)
        timeout = p.get("timeoutMs")
        record = InterruptRecord(
            interrupt_id=self._host.new_id("int"),
            run_id=self.run_id,
            tenant=self.tenant,
            workflow_id=self.workflow_id,
            node_id=wire_node,
            exec_node=self.node_id,
            visit=self.visit,
            ordinal=ordinal,
            key=p["key"],
            kind=p["kind"],
            status="pending",
            payload=p,
            requested_at_ms=now,
            deadline_ms=now + timeout if timeout else None,
            state=dict(extra.get("state", {})) if extra else {},
        )
        requested = self._draft("interrupt.requested", p, node_id=wire_node)
        requested.interrupt_id = record.interrupt_id
        record.requested_event_id = requested.event_id
        suspended_payload: dict[str, Any] = {
            "nodeId": wire_node,
            "interruptId": record.interrupt_id,
            "kind": p["kind"],
            "key": p["key"],
            "reason": kinds.kind_of(p["kind"]).suspend_reason,
        }
        if extra:
            suspended_payload.update({k: v for k, v in extra.items() if k != "state"})
        suspended = self._draft("node.suspended", suspended_payload, node_id=wire_node, causation=requested.event_id)
        record.state["suspendedEventId"] = suspended.event_id
        if copied_from is not None:
            self._settle_copy(record, copied_from)
        elif instant is not None:
            record.resolved_at_ms = now
            resolution, more = instant(record)
            if record.kind not in REBUILT_KINDS:
                resolution["emitted"] = [{"type": d.type, "payload": d.payload, "nodeId": d.node_id} for d in more]
            record.status = "resolved"
            record.resolution = resolution
            record.consumed = True
            self.activation.drafts.extend(more)
        self.activation.new_interrupts.append(record)
        self._by_key[record.key] = record
        self._by_slot[(self.visit, ordinal)] = record
        return record

    async def _replay_from_source(
        self, p: dict[str, Any], ordinal: int, address: str | None, extra: Mapping[str, Any] | None
    ) -> InterruptRecord | None:
        source = await self._host.source_interrupt(self.node_id, self.visit, ordinal)
        if source is None:
            return None
        if source.kind != p["kind"] or _comparable(source.payload) != _comparable(p):
            raise ReplayDivergedError(
                f"node {self.node_id!r} asked for a different interrupt than the source run at ordinal {ordinal}",
                details={"nodeId": self.node_id, "ordinal": ordinal, "sourceKey": source.key},
            )
        extra_copy: dict[str, Any] = dict(extra or {})
        extra_copy["state"] = {k: v for k, v in source.state.items() if k != "suspendedEventId"}
        for name in ("promptTurn", "turn"):
            if name in extra_copy and name in source.state:
                extra_copy[name] = source.state[name]
        return self._new_record(p, ordinal, address, extra_copy, None, copied_from=source)

    def _settle_copy(self, record: InterruptRecord, source: InterruptRecord) -> None:
        """A replay fork takes the source's answer instead of asking anyone."""
        if source.open:
            return
        now = self._host.clock_now_ms()
        record.status = source.status
        record.resolution = dict(source.resolution or {})
        record.resolved_at_ms = now
        record.consumed = True
        for event in _emitted(source):
            payload = event["payload"]
            if isinstance(payload, dict) and "interruptId" in payload:
                payload = {**payload, "interruptId": record.interrupt_id}
            causation = record.state.get("suspendedEventId") if event["type"] == "conversation.opened" else None
            self._draft(event["type"], payload, node_id=event.get("nodeId", record.node_id), causation=causation)

    async def recorded_at(self, ordinal: int) -> InterruptRecord | None:
        """The interrupt this visit raised at ``ordinal`` (read by its automatic key when not loaded)."""
        record = self._by_slot.get((self.visit, ordinal))
        if record is not None or self._complete:
            return record
        record = await self._host.find_key(f"{self.run_id}:{self.node_id}:{self._int_base + ordinal}")
        if record is None or (record.exec_node, record.visit, record.ordinal) != (self.node_id, self.visit, ordinal):
            return None
        self._by_key[record.key] = record
        self._by_slot[(self.visit, ordinal)] = record
        return record

    def peek_next(self) -> InterruptRecord | None:
        """The interrupt the next :meth:`request` of this activation will return, if it is loaded."""
        return self._by_slot.get((self.visit, self.activation.ordinals))

    async def next_recorded(self) -> InterruptRecord | None:
        """The interrupt the next :meth:`request` of this activation will return, if it exists."""
        return await self.recorded_at(self.activation.ordinals)

    def skip_to(self, ordinal: int) -> None:
        """Make ``ordinal`` the place of the next request: the node goes on from there without
        making the requests before it again (their answers stay where they are)."""
        if ordinal < self.activation.ordinals:
            raise ValueError(f"request {ordinal} of node {self.node_id!r} was already made in this activation")
        self.activation.ordinals = ordinal

    async def source_for_next(self) -> InterruptRecord | None:
        """In a replay fork: the source run's interrupt at the next request's place."""
        if not self._replaying_fork:
            return None
        return await self._host.source_interrupt(self.node_id, self.visit, self.activation.ordinals)

    def next_interrupt_number(self) -> int:
        """The run-wide counter the next auto key of this node will use."""
        return self._int_base + self.activation.ordinals


def _emitted(record: InterruptRecord) -> list[dict[str, Any]]:
    """The events a settled interrupt emitted: kept in its resolution, or built again from its row."""
    resolution = record.resolution or {}
    return list(resolution["emitted"]) if "emitted" in resolution else rebuilt_events(record)


def _comparable(payload: Mapping[str, Any]) -> dict[str, Any]:
    """An interrupt payload without its run-specific parts (key, remaining time)."""
    return {k: v for k, v in payload.items() if k not in ("key", "timeoutMs")}
