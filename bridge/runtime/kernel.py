"""What the engine's services share: the narrow view of the engine they are built on.

:class:`~openwop_bridge.runtime.engine.Engine` is a thin facade over services with one
concept each (:mod:`~openwop_bridge.runtime.runs`, :mod:`~openwop_bridge.runtime.run_views`,
:mod:`~openwop_bridge.runtime.answers`, :mod:`~openwop_bridge.runtime.links`,
:mod:`~openwop_bridge.runtime.follow`). A service sees the engine only through
:class:`Kernel`, so none of them imports the engine; a run's executor sees it
through :class:`ExecutorHost`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from openwop_bridge.core.clock import Clock
from openwop_bridge.core.decisions.common import AnswerCheck
from openwop_bridge.core.events import EventDraft
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.core.workflow import WorkflowDefinition
from openwop_bridge.runtime.ask import AskService
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.hub import EventHub
from openwop_bridge.runtime.joint import Handoff
from openwop_bridge.runtime.metrics import Metrics
from openwop_bridge.runtime.nodes.base import NodeRegistry
from openwop_bridge.store.base import Claim, CommitResult, KvWrite, MutationResult, RunCommit, Store

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


class Kernel(Protocol):
    """The engine's shared parts and the two hooks every write goes through."""

    store: Store
    clock: Clock
    config: EngineConfig
    instance_id: str
    hub: EventHub
    node_types: NodeRegistry
    answer_checks: dict[str, AnswerCheck]
    ask_service: AskService
    metrics: Metrics

    @property
    def claim(self) -> Claim:
        """Lease a run a mutation wakes to this instance in that same transaction."""

    def workflow(self, workflow_id: str) -> WorkflowDefinition:
        """A registered workflow, or 404."""

    def loaded_workflow(self, workflow_id: str) -> WorkflowDefinition | None:
        """A registered workflow, or None."""

    def start_executor(self, run_id: str, claimed: RunRecord | None = None) -> None:
        """Execute a run here (``claimed``: this instance already leased it)."""

    def start_new_run(
        self, run: RunRecord, events: list[EventDraft], writes: Sequence[KvWrite] = ()
    ) -> asyncio.Future[bool] | None:
        """Execute a run not yet stored, whose first commit inserts it with ``writes`` (None while stopping);
        the future is True once it is inserted, False if it was not."""

    def dispatch(self, run_id: str) -> None:
        """Make sure the run's work gets done: wake its executor here or start one."""

    async def joint_settled(self, run_id: str) -> bool:
        """Wait until no answer to the run is in flight with the step it woke here; True if it waited."""

    def start_joint(self, run: RunRecord, settled: InterruptRecord) -> Handoff | None:
        """Resume a run an answer not yet committed leases here (see :mod:`openwop_bridge.runtime.joint`)."""

    def after_mutation(self, result: MutationResult) -> None:
        """Publish a guarded mutation's events and wake or start the run's executor."""


class ExecutorHost(Protocol):
    """What a :class:`RunExecutor` needs from the engine that starts it, and nothing more."""

    store: Store
    clock: Clock
    instance_id: str
    node_types: NodeRegistry

    @property
    def default_threshold(self) -> float:
        """The escalation threshold for low-confidence decisions."""

    @property
    def conversation_enabled(self) -> bool:
        """Whether nodes may open conversations."""

    @property
    def separation_of_duties(self) -> bool:
        """Whether every approval separates duties unless it says otherwise."""

    @property
    def max_node_executions(self) -> int:
        """The default cap on node activations per run."""

    def dispatch(self, run_id: str) -> None:
        """Make sure an executor drives this run (a child just created)."""

    def after_commit(self, run: RunRecord, commit: RunCommit, result: CommitResult) -> None:
        """Publish a committed step (events to followers, wake-ups to parents)."""

    async def cancel_children(self, run_id: str) -> None:
        """Cancel a run's active children."""

    async def joint_settled(self, run_id: str) -> bool:
        """Wait until no answer to the run is in flight with the step it woke here; True if it waited."""

    async def find_child(self, parent_run_id: str, node_id: str, visit: int, ordinal: int) -> str | None:
        """A child already started by a node activation."""

    def prepare_child(
        self, parent: RunRecord, ctx: NodeContext, workflow_id: str, inputs: Mapping[str, Any], ordinal: int
    ) -> tuple[RunRecord, list[EventDraft]]:
        """The child run record and first event, committed with the parent's step."""


class Delegate(Generic[S, P, R]):
    """An engine method that is a service's method: ``create_run = Delegate("_runs", RunService.create_run)``.

    Read on an engine, it is the service's bound method, with the service
    method's own signature for type checkers; the engine keeps its public names
    while the work lives in the service.
    """

    def __init__(self, service: str, method: Callable[Concatenate[S, P], R]) -> None:
        self.service = service
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Delegate[S, P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> Delegate[S, P, R] | Callable[P, R]:
        if obj is None:
            return self
        bound: Callable[P, R] = getattr(getattr(obj, self.service), self.method.__name__)
        return bound
