"""Delegations kept in the store: made, listed, ended, found when a delegate answers, and the open
approvals a delegate may answer in someone's place (what the inbox marks "for alice").

Each delegation is a JSON object in the store's key-value space (namespace ``delegations``, key
``tenant␟delegator␟id``), so every instance sharing the database sees it; a tenant keeps at most
:data:`~openwop_bridge.core.delegations.MAX_PER_TENANT` (counted and stored in one transaction).
The rules are :mod:`openwop_bridge.core.delegations`'s.

Notices find where a person's requests go while they are away through :meth:`DelegationService.standing_delegations`:
each delegator's delegations are read from the store at most every :data:`CACHE_MS` on this instance (a
delegation made or ended here counts at once; one made or ended on another instance within that time),
and whether each still stands is decided on every call, so one that runs out stops at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openwop_bridge.core import kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decision_record import DecisionDraft, digest, principal_subject
from openwop_bridge.core.decisions.approval import may_stand_in
from openwop_bridge.core.delegations import (
    MAX_PER_TENANT,
    MAX_SPAN_MS,
    MAX_WORKFLOWS,
    Delegation,
    DelegationExpiredError,
)
from openwop_bridge.core.errors import ConflictError, ForbiddenError, NotFoundError, ValidationError
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.runtime.adapter_state import AdapterState
from openwop_bridge.runtime.kernel import Kernel
from openwop_bridge.store.steps import Recorded

__all__ = ["DelegationService"]

NAMESPACE = "delegations"
_SEP = "\x1f"
_PAGE = 500
#: The most interrupts one :meth:`DelegationService.stand_ins` call looks at (an inbox page at most).
MAX_STAND_INS = 500
#: How long one delegator's delegations, once read, answer :meth:`DelegationService.standing_delegations`.
CACHE_MS = 2_000
#: The most delegators whose delegations are kept read at once (beyond it, the oldest reads are dropped).
CACHE_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class _Read:
    at_ms: float
    found: tuple[Delegation, ...]


def _key(tenant: str, delegator: str, delegation_id: str = "") -> str:
    return f"{tenant}{_SEP}{delegator}{_SEP}{delegation_id}"


def _recorded(principal: Principal, made: Delegation, decision: str, now_ms: int, record_id: str) -> Recorded:
    """The decision record of making or ending ``made``: by whom, to whom (``action``: the delegate), the
    delegation's id and the hash of what it says (delegator, delegate, times, workflows, reason, rights)."""
    draft = DecisionDraft(
        record_id=record_id,
        decision=decision,
        by=principal.id,
        subject=principal_subject(principal),
        action=made.delegate,
        delegation=made.delegation_id,
        value_hash=digest(made.as_json()),
    )
    return Recorded(made.tenant, None, [draft], now_ms)


class DelegationService:
    """Making, listing, ending and finding delegations (see the module docstring)."""

    def __init__(self, kernel: Kernel) -> None:
        self._k = kernel
        self._state = AdapterState(kernel.store, kernel.clock, NAMESPACE)
        self._read: dict[tuple[str, str], _Read] = {}

    async def create_delegation(
        self,
        principal: Principal,
        *,
        delegate: str,
        until_ms: int,
        from_ms: int | None = None,
        workflows: Sequence[str] = (),
        reason: str = "",
        delegator: str | None = None,
    ) -> Delegation:
        """Let ``delegate`` answer in the delegator's place from ``from_ms`` (default now) until ``until_ms``.

        The delegator is the caller, or anyone an admin names. It carries the caller's rights
        (roles and scopes) when the caller delegates for themselves; an admin delegating for someone
        else gives only ``approvals:respond``, no role.
        """
        principal.require("approvals:respond")
        who = delegator or principal.id
        if who != principal.id and not principal.has_role("admin"):
            raise ForbiddenError("only an admin may make a delegation for someone else")
        now = self._k.clock.now_ms()
        start = now if from_ms is None else from_ms
        problems = []
        if not delegate or len(delegate) > 256 or _SEP in delegate:
            problems.append("delegate: a principal id of 1 to 256 characters")
        if delegate == who:
            problems.append("delegate: someone other than the delegator")
        if until_ms <= max(start, now):
            problems.append("until: after from and after now")
        elif until_ms - start > MAX_SPAN_MS:
            problems.append(f"until: at most {MAX_SPAN_MS // 86_400_000} days after from")
        if len(workflows) > MAX_WORKFLOWS:
            problems.append(f"workflows: at most {MAX_WORKFLOWS}")
        if len(reason) > 500:
            problems.append("reason: at most 500 characters")
        if problems:
            raise ValidationError("invalid delegation: " + "; ".join(problems), details={"problems": problems})
        own = who == principal.id
        made = Delegation(
            delegation_id=self._k.clock.new_id("dlg"),
            tenant=principal.tenant,
            delegator=who,
            delegate=delegate,
            from_ms=start,
            until_ms=until_ms,
            workflows=tuple(dict.fromkeys(workflows)),
            reason=reason,
            created_by=principal.id,
            created_at_ms=now,
            roles=principal.roles if own else frozenset(),
            scopes=principal.scopes if own else frozenset({"approvals:respond"}),
        )
        stored = await self._state.put_capped(
            _key(made.tenant, who, made.delegation_id),
            made.as_json(),
            field="tenant",
            cap=MAX_PER_TENANT,
            recorded=_recorded(principal, made, "delegation.created", now, self._k.clock.new_id("dec")),
        )
        if not stored:
            raise ConflictError(f"this tenant keeps {MAX_PER_TENANT} delegations already: end some first")
        self._read.pop((made.tenant, who), None)
        return made

    async def delegations(self, principal: Principal) -> list[Delegation]:
        """The caller's delegations, made by them or to them (an admin: the tenant's), newest first."""
        principal.require("approvals:respond")
        found = await self._tenant(principal.tenant)
        if principal.has_role("admin"):
            return found
        return [d for d in found if principal.id in (d.delegator, d.delegate)]

    async def end_delegation(self, principal: Principal, delegation_id: str) -> Delegation:
        """End a delegation now (its delegator, or an admin); ending one that ended already changes nothing."""
        principal.require("approvals:respond")
        for made in await self._tenant(principal.tenant):
            if made.delegation_id != delegation_id:
                continue
            if principal.id != made.delegator and not principal.has_role("admin"):
                break
            if made.ended_at_ms is not None:
                return made
            now = self._k.clock.now_ms()
            ended = Delegation.from_json({**made.as_json(), "endedAtMs": now})
            key = _key(made.tenant, made.delegator, made.delegation_id)
            recorded = _recorded(principal, ended, "delegation.ended", now, self._k.clock.new_id("dec"))
            if not await self._k.store.kv_replace(
                NAMESPACE, key, made.as_json(), ended.as_json(), now, recorded=recorded
            ):
                raise ConflictError("the delegation changed meanwhile: read it again")
            self._read.pop((made.tenant, made.delegator), None)
            return ended
        raise NotFoundError(f"no delegation {delegation_id!r} of yours")

    async def standing_in(self, principal: Principal, delegator: str, workflow_id: str) -> Delegation | None:
        """The delegation that lets ``principal`` answer in ``delegator``'s place on a run of ``workflow_id``
        now; None when there is none. One that covered it but ran out or was ended: ``delegation_expired``."""
        if _SEP in delegator:
            return None
        now = self._k.clock.now_ms()
        over = None
        after: str | None = None
        while True:
            page = await self._state.scan(_key(principal.tenant, delegator), limit=_PAGE, after=after)
            for _, doc in page:
                made = Delegation.from_json(doc)
                if made.delegate != principal.id or not made.covers(workflow_id):
                    continue
                if made.active(now):
                    return made
                if made.over(now):
                    over = made
            if len(page) < _PAGE:
                break
            after = page[-1][0]
        if over is not None:
            raise DelegationExpiredError(
                f"{principal.id!r} no longer stands in for {delegator!r}: the delegation "
                f"{over.delegation_id!r} ended or ran out",
                details={"delegationId": over.delegation_id},
            )
        return None

    async def stand_ins(
        self, principal: Principal, interrupt_ids: Sequence[str]
    ) -> list[tuple[InterruptRecord, list[Delegation]]]:
        """Of the open approvals ``interrupt_ids`` names, those ``principal`` may answer now in someone's place,
        each with the delegations that let them (one per person they stand in for, as the decision would
        take them: the delegator's rights, approvers, separation of duties, the delegator's slot still empty)."""
        if len(interrupt_ids) > MAX_STAND_INS:
            raise ValidationError(f"at most {MAX_STAND_INS} interrupts at a time")
        if not principal.has_scope("approvals:respond"):
            return []
        now = self._k.clock.now_ms()
        held = [d for d in await self._tenant(principal.tenant) if d.delegate == principal.id and d.active(now)]
        found: list[tuple[InterruptRecord, list[Delegation]]] = []
        if not held:
            return found
        for interrupt_id in dict.fromkeys(interrupt_ids):
            record = await self._k.store.get_interrupt(interrupt_id)
            if record is None or record.tenant != principal.tenant or not record.open:
                continue
            if not kinds.kind_of(record.kind).votes:
                continue
            run = await self._k.store.load_run(record.run_id)
            if run is None:
                continue
            through: dict[str, Delegation] = {}
            for made in held:
                if made.delegator in through:
                    continue
                if may_stand_in(record, run, made, principal, now, self._k.clock.new_id):
                    through[made.delegator] = made
            if through:
                found.append((record, list(through.values())))
        return found

    async def standing_delegations(self, tenant: str, delegator: str) -> list[Delegation]:
        """The delegations of ``delegator`` in ``tenant`` that stand now, newest first (see the module docstring
        for how fresh they are): whom the delegator's notices go to while they are away."""
        if _SEP in delegator or _SEP in tenant:
            return []
        clock = self._k.clock
        seen = self._read.get((tenant, delegator))
        if seen is None or clock.monotonic() * 1000 - seen.at_ms >= CACHE_MS:
            found: list[Delegation] = []
            after: str | None = None
            while True:
                page = await self._state.scan(_key(tenant, delegator), limit=_PAGE, after=after)
                found += [Delegation.from_json(doc) for _, doc in page]
                if len(page) < _PAGE:
                    break
                after = page[-1][0]
            found.sort(key=lambda d: (d.created_at_ms, d.delegation_id), reverse=True)
            if len(self._read) >= CACHE_SIZE:
                self._read.clear()
            seen = self._read[(tenant, delegator)] = _Read(clock.monotonic() * 1000, tuple(found))
        now = clock.now_ms()
        return [d for d in seen.found if d.active(now)]

    async def _tenant(self, tenant: str) -> list[Delegation]:
        found: list[Delegation] = []
        after: str | None = None
        while True:
            page = await self._state.scan(tenant + _SEP, limit=_PAGE, after=after)
            found += [Delegation.from_json(doc) for _, doc in page]
            if len(page) < _PAGE:
                break
            after = page[-1][0]
        found.sort(key=lambda d: d.created_at_ms, reverse=True)
        return found
