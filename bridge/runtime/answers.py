"""Answering interrupts: resolve, cancel, preview, and the inbox.

Resolve by run-scoped address, by id or through a signed link; cancel one
interrupt; preview an answer or a cancellation without applying it; list the
pending inbox. Each answer is prepared against the interrupt's payload first (schema,
normal form, answer check: :func:`openwop_bridge.core.decisions.answer.prepare_answer`), then is one
guarded transaction applying the decision on the current rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openwop_bridge.core import approvals, kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decisions.answer import answer_decision, prepare_answer
from openwop_bridge.core.decisions.approval import gate_denial, unnamed_link_refusal
from openwop_bridge.core.decisions.cancel import cancel_decision
from openwop_bridge.core.decisions.common import Answer, link_subject
from openwop_bridge.core.decisions.exchange import exchange_index, named_earlier_turn, names_its_turn
from openwop_bridge.core.delegations import Delegation, DelegationExpiredError
from openwop_bridge.core.errors import ForbiddenError, InterruptNotFoundError, ValidationError
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, RunRecord
from openwop_bridge.core.tokens import TokenClaims
from openwop_bridge.core.views import inbox_item
from openwop_bridge.notify.states import KEY_PURPOSE, delivery_state
from openwop_bridge.runtime.arrivals import Answering, Arrivals
from openwop_bridge.runtime.ask import AskService, RecordingAskService
from openwop_bridge.runtime.delegations import DelegationService
from openwop_bridge.runtime.joint import answer_with_step
from openwop_bridge.runtime.kernel import Kernel
from openwop_bridge.runtime.links import LinkService
from openwop_bridge.runtime.runs import RunService
from openwop_bridge.runtime.telemetry import interrupt_resolving

__all__ = ["AnswerService", "AskService", "RecordingAskService"]


class AnswerService:
    """Answering and cancelling interrupts, previews and the inbox (see the module docstring)."""

    def __init__(
        self, kernel: Kernel, runs: RunService, links: LinkService, delegations: DelegationService | None = None
    ) -> None:
        self._k = kernel
        self._runs = runs
        self._links = links
        self._delegations = delegations or DelegationService(kernel)
        self._arrivals = Arrivals()

    async def delegation_for(self, principal: Principal, value: Any, record: InterruptRecord) -> Delegation | None:
        """The delegation letting ``principal`` answer ``record`` in the place of the voter ``value`` names."""
        named = approvals.named_voter(value)
        if named is None or named == principal.id or principal.can_act_as:
            return None  # their own answer, or someone allowed to act for others naming a voter
        return await self._delegations.standing_in(principal, named, record.workflow_id)

    async def interrupt_at(self, run_id: str, node_id: str, principal: Principal) -> InterruptRecord:
        """The latest interrupt at a run-scoped address, visible to the principal."""
        _, record = await self._runs.visible_run_at(run_id, node_id, principal)
        if record is None:
            raise InterruptNotFoundError(f"no interrupt at node {node_id!r} of run {run_id!r}")
        return record

    async def _ask_answer(self, record: InterruptRecord | None, value: Any, asked_by: str) -> str | None:
        if record is None or not kinds.kind_of(record.kind).votes or not isinstance(value, Mapping):
            return None
        if value.get("action") != "ask":
            return None
        question = value.get("question") or value.get("feedback")
        if not isinstance(question, str) or not question.strip():
            return None
        # Refuse what the decision would refuse before the ask service reads the question.
        limits = self._k.config.ask_limits
        limits.check_room(record.state.get("askExchanges", []), None, question, "")
        return limits.clip_answer(await self._k.ask_service.answer(record, question, asked_by))

    async def resolve(
        self,
        principal: Principal,
        value: Any,
        *,
        run_id: str | None = None,
        node_id: str | None = None,
        interrupt_id: str | None = None,
        idempotency_key: str | None = None,
        assurance: str = "bearer",
    ) -> dict[str, Any]:
        """Answer an interrupt by run-scoped address (or id). One guarded transaction.

        Returns ``{runId, nodeId, interruptId, status, …}``: ``resolved`` when the
        interrupt settled, ``pending`` when a quorum vote or an ``ask`` left it open.
        ``assurance`` is ``key-bound`` only once the host verified a passkey assertion over this
        answer (:mod:`openwop_bridge.core.assurance`).
        """
        principal.require("approvals:respond")
        with self._arrivals.answering() as me:
            return await self._resolve(me, principal, value, run_id, node_id, interrupt_id, idempotency_key, assurance)

    async def _resolve(
        self,
        me: Answering,
        principal: Principal,
        value: Any,
        run_id: str | None,
        node_id: str | None,
        interrupt_id: str | None,
        idempotency_key: str | None,
        assurance: str = "bearer",
    ) -> dict[str, Any]:
        if interrupt_id is not None:
            run = None if run_id is None else await self._runs.visible_run(run_id, principal)
            current = await self._k.store.get_interrupt(interrupt_id)
            if current is None or principal.tenant not in (current.tenant, "*"):
                raise InterruptNotFoundError(f"no interrupt {interrupt_id!r}")
        else:
            assert run_id is not None and node_id is not None
            # The run and the interrupt at its address in one read.
            run, current = await self._runs.visible_run_at(run_id, node_id, principal)
            if current is None:
                raise InterruptNotFoundError(f"no interrupt at node {node_id!r} of run {run_id!r}")
            interrupt_id = current.interrupt_id
        if kinds.kind_of(current.kind).turn:
            # An answer answers the turn open when it came, or the earlier turn its messageId names:
            # decided on that turn's row, a turn already taken is 409, never the next turn's answer.
            current = await self._named_turn(current, value)
            if not names_its_turn(value):
                current = await self._open_when_arrived(me, current)
            interrupt_id = current.interrupt_id
        answer = Answer(
            principal=principal,
            value=value,
            surface="run",
            delegation=await self.delegation_for(principal, value, current),
            ask_answer=await self._ask_answer(current, value, principal.id),
            idempotency_key=idempotency_key,
            checks=self._k.answer_checks,
            ask_limits=self._k.config.ask_limits,
            conversation_limits=self._k.config.conversation_limits,
            assurance=assurance,
        )
        return await self._apply_answer(
            answer, current, me, interrupt_id=interrupt_id, run_id=run_id, node_id=node_id, run=run
        )

    async def _open_when_arrived(self, me: Answering, found: InterruptRecord) -> InterruptRecord:
        """The turn an answer that names none is for: ``found`` (the turn its address holds now), or
        the turn open when it arrived, if another answer took that one since
        (:mod:`~openwop_bridge.runtime.arrivals`)."""
        earlier = await self._arrivals.open_when_arrived(me, found)
        if earlier is None:
            return found
        return await self._k.store.get_interrupt(earlier.interrupt_id) or found

    async def _named_turn(self, current: InterruptRecord, value: Any) -> InterruptRecord:
        """The exchange an answer to the turn ``current`` is for: the earlier turn of the same
        conversation its ``turn.messageId`` names, if the node raised one, else ``current``."""
        earlier = named_earlier_turn(current, value)
        if earlier is None:
            return current
        cid = current.payload["data"]["conversationId"]
        for record in await self._k.store.node_interrupts(current.run_id, current.exec_node):
            data = record.payload.get("data", {})
            if record.kind == current.kind and data.get("conversationId") == cid and exchange_index(record) == earlier:
                return record
        return current

    async def preview_answer(self, principal: Principal, value: Any, *, interrupt_id: str) -> None:
        """Check an answer without applying it: raises exactly what :meth:`resolve` would.

        The answer is prepared as :meth:`resolve` prepares it, and the decision takes it on the
        current rows outside a transaction; a concurrent change can still make the real answer fail.
        """
        record = await self._visible_interrupt(principal, interrupt_id)
        answer = Answer(
            principal=principal,
            value=value,
            surface="run",
            delegation=await self.delegation_for(principal, value, record),
            ask_answer="(preview)",
            checks=self._k.answer_checks,
            ask_limits=self._k.config.ask_limits,
            conversation_limits=self._k.config.conversation_limits,
        )
        now = self._k.clock.now_ms()
        prepared = prepare_answer(record, answer, now)
        await self._preview(record, answer_decision(answer, now, self._k.clock.new_id, prepared))

    async def may_answer(self, principal: Principal, record: InterruptRecord) -> bool:
        """Whether ``principal`` could answer ``record`` with its own key, as itself.

        The ``approvals:respond`` scope and the tenant; for a gate, also its role, scope and
        approvers, as :meth:`resolve` checks them. Says nothing of whether a given answer is valid:
        a surface asks this before offering a way to answer (a form), not before applying one.
        """
        if not principal.has_scope("approvals:respond") or principal.tenant not in (record.tenant, "*"):
            return False
        if not kinds.kind_of(record.kind).votes:
            return True
        run = await self._k.store.load_run(record.run_id)
        if run is None:
            return False
        now = self._k.clock.now_ms()
        return gate_denial(record, run, principal, now, self._k.clock.new_id, principal.id) is None

    async def preview_cancel(self, principal: Principal, interrupt_id: str) -> None:
        """Check a cancellation without applying it: raises what :meth:`cancel_interrupt` would."""
        record = await self._visible_interrupt(principal, interrupt_id)
        await self._preview(record, cancel_decision(principal, self._k.clock.now_ms(), self._k.clock.new_id))

    async def _visible_interrupt(self, principal: Principal, interrupt_id: str) -> InterruptRecord:
        principal.require("approvals:respond")
        record = await self._k.store.get_interrupt(interrupt_id)
        if record is None or principal.tenant not in (record.tenant, "*"):
            raise InterruptNotFoundError(f"no interrupt {interrupt_id!r}")
        return record

    async def _preview(self, record: InterruptRecord, decide: InterruptDecision) -> None:
        run = await self._k.store.load_run(record.run_id)
        assert run is not None
        mutation = decide(record, run)
        if mutation.error is not None:
            raise mutation.error

    async def open_interrupts(self, run_id: str, *, with_children: bool = True) -> list[InterruptRecord]:
        """Open, answerable interrupts of a run (and, by default, of its active child runs)."""
        records = [
            r for r in await self._k.store.run_interrupts(run_id, open_only=True) if kinds.kind_of(r.kind).listed
        ]
        if with_children:
            for child in await self._k.store.child_runs(run_id):
                if not child.terminal:
                    records += await self.open_interrupts(child.run_id)
        return records

    async def _apply_answer(
        self,
        answer: Answer,
        current: InterruptRecord,
        me: Answering,
        *,
        interrupt_id: str | None,
        run_id: str | None,
        node_id: str | None,
        run: RunRecord | None = None,
    ) -> dict[str, Any]:
        self._arrivals.targets(me, current)
        # One answer to a run at a time while one is in flight with the step it woke; ``run`` (the
        # interrupt's run as read before) is stale once that answer committed.
        if await self._k.joint_settled(current.run_id):
            run = None
        now = self._k.clock.now_ms()
        # Everything that depends only on the payload runs here, not in the transaction; the
        # decision prepares again only if it finds another interrupt at the address.
        decide = answer_decision(answer, now, self._k.clock.new_id, prepare_answer(current, answer, now))
        with interrupt_resolving("resolve", **{"openwop.interrupt_id": interrupt_id, "openwop.node_id": node_id}):
            # Where it can, the answer and the step it wakes are one transaction.
            joint = await answer_with_step(self._k, decide, current, now, run)
            if joint is not None:
                result = joint
            elif interrupt_id is not None:
                result = await self._k.store.mutate_interrupt(
                    decide, now, interrupt_id=interrupt_id, claim=self._k.claim
                )
            else:
                result = await self._k.store.mutate_interrupt(
                    decide, now, run_id=run_id, node_id=node_id, claim=self._k.claim
                )
        if joint is None:
            self._k.after_mutation(result)
        record = result.interrupt
        assert record is not None
        body: dict[str, Any] = {
            "runId": record.run_id,
            "nodeId": record.node_id,
            "interruptId": record.interrupt_id,
            "kind": record.kind,
        }
        body.update(result.result or {})
        if body.get("status") == "resolved":
            if not body.get("idempotent"):
                if record.interrupt_id == current.interrupt_id:
                    self._arrivals.settled(me)
                self._k.metrics.resolved(record.kind, record.requested_at_ms, now)
            if record.resolution:
                body["resumeValue"] = record.resolution.get("resumeValue")
        return body

    async def resolve_token(
        self,
        token: str,
        value: Any,
        principal: Principal | None = None,
        *,
        idempotency_key: str | None = None,
        verified: tuple[TokenClaims, InterruptRecord] | None = None,
        assurance: str = "bearer",
    ) -> dict[str, Any]:
        """Answer through a signed link (``POST /v1/interrupts/{token}``); ``verified`` is
        what :meth:`verify_token` already returned for it, ``assurance`` as for :meth:`resolve`."""
        claims, record = verified or await self._links.verify_token(token)
        if claims.on_behalf is not None and claims.subject is not None and kinds.kind_of(record.kind).votes:
            return await self._resolve_standing_in(
                claims, record, value, principal, idempotency_key=idempotency_key, assurance=assurance
            )
        who = claims.subject or (principal.id if principal else "signed-link")
        # A link the decision refuses (it names no one, on a quorum gate) puts no question to the ask service.
        refused = unnamed_link_refusal(record, principal, claims.subject) is not None
        answer = Answer(
            principal=principal,
            value=value,
            surface="token",
            token_subject=claims.subject,
            token_intent=claims.intent,
            ask_answer=None if refused else await self._ask_answer(record, value, who),
            idempotency_key=idempotency_key,
            checks=self._k.answer_checks,
            ask_limits=self._k.config.ask_limits,
            conversation_limits=self._k.config.conversation_limits,
            assurance=assurance,
        )
        with self._arrivals.answering() as me:
            return await self._apply_answer(
                answer, record, me, interrupt_id=record.interrupt_id, run_id=None, node_id=None
            )

    async def _resolve_standing_in(
        self,
        claims: TokenClaims,
        record: InterruptRecord,
        value: Any,
        principal: Principal | None,
        *,
        idempotency_key: str | None,
        assurance: str,
    ) -> dict[str, Any]:
        """Answer through a delegate's link (made out to the delegate, ``for`` the delegator): exactly a delegated
        vote through the API, by the link's person naming the delegator, through a delegation standing now."""
        assert claims.subject is not None and claims.on_behalf is not None
        acting, delegator = claims.subject, claims.on_behalf
        if principal is not None and principal.id != acting:
            raise ForbiddenError(f"this link is for {acting!r}; answer it without another principal's key")
        named = approvals.named_voter(value)
        if named is not None and named != delegator:
            raise ForbiddenError(f"this link answers in {delegator!r}'s place and cannot name anyone else")
        if isinstance(value, str):
            value = {"action": value}
        if isinstance(value, Mapping):
            value = {**value, "voter": delegator}
        # Without a key, the link's person, vouched for by the link: the delegation gives the rights (the
        # delegator's), and a gate a link alone may not answer (a role, a scope) still needs a key.
        who = principal or Principal(
            id=acting,
            tenant=record.tenant,
            scopes=frozenset({"approvals:respond"}),
            subject=link_subject(acting),
        )
        delegation = await self._delegations.standing_in(who, delegator, record.workflow_id)
        if delegation is None:
            raise DelegationExpiredError(
                f"{acting!r} does not stand in for {delegator!r} on this workflow: answer with a link made out to you"
            )
        answer = Answer(
            principal=who,
            value=value,
            surface="token",
            token_intent=claims.intent,
            link_principal=principal is None,
            delegation=delegation,
            ask_answer=await self._ask_answer(record, value, acting),
            idempotency_key=idempotency_key,
            checks=self._k.answer_checks,
            ask_limits=self._k.config.ask_limits,
            conversation_limits=self._k.config.conversation_limits,
            assurance=assurance,
        )
        with self._arrivals.answering() as me:
            return await self._apply_answer(
                answer, record, me, interrupt_id=record.interrupt_id, run_id=None, node_id=None
            )

    async def cancel_interrupt(
        self, principal: Principal, interrupt_id: str, reason: str = "cancelled"
    ) -> dict[str, Any]:
        """Cancel one interrupt: approvals fail closed, other kinds raise InterruptCancelledError."""
        principal.require("approvals:respond")
        record = await self._k.store.get_interrupt(interrupt_id)
        if record is not None:
            await self._k.joint_settled(record.run_id)
        now = self._k.clock.now_ms()
        result = await self._k.store.mutate_interrupt(
            cancel_decision(principal, now, self._k.clock.new_id, reason),
            now,
            interrupt_id=interrupt_id,
            claim=self._k.claim,
        )
        self._k.after_mutation(result)
        assert result.interrupt is not None
        return {"runId": result.interrupt.run_id, "interruptId": interrupt_id, **(result.result or {})}

    async def inbox(
        self,
        principal: Principal,
        *,
        kind: str | None = None,
        status: str = "pending",
        limit: int = 50,
        cursor: str | None = None,
        base_url: str = "",
    ) -> dict[str, Any]:
        """The pending-interrupts inbox of the caller's tenant."""
        principal.require("interrupts:read")
        if kind is not None and kind not in kinds.KINDS:
            raise ValidationError(f"unknown kind {kind!r}", details={"kinds": list(kinds.KINDS)})
        mapped = {"pending": "pending", "resolved": "resolved", "expired": "expired", "cancelled": "cancelled"}
        if status not in mapped:
            raise ValidationError("status must be pending, resolved, expired or cancelled")
        if not 1 <= limit <= 500:
            raise ValidationError("limit must be between 1 and 500")
        page = await self._k.store.inbox(principal.tenant, kind=kind, status=status, limit=limit, cursor=cursor)
        now = self._k.clock.now_ms()
        key = self._links.derived_keys(KEY_PURPOSE)[0]
        delivery = await delivery_state(self._k.store, [r.interrupt_id for r in page.items], key)
        items = []
        for record in page.items:
            minted = self._links.view_token(record, "inspect", principal.id) if record.open else None
            url = f"{base_url}/v1/interrupts/{minted[0]}" if minted else None
            items.append({**inbox_item(record, now, url), **delivery.get(record.interrupt_id, {})})
        return {"items": items, "nextCursor": page.next_cursor}

    async def inbox_count(self, principal: Principal, *, kind: str | None = None) -> int:
        """How many interrupts wait in the caller's tenant's inbox (of ``kind``, if given), over all its pages."""
        principal.require("interrupts:read")
        if kind is not None and kind not in kinds.KINDS:
            raise ValidationError(f"unknown kind {kind!r}", details={"kinds": list(kinds.KINDS)})
        return await self._k.store.inbox_count(principal.tenant, kind=kind, status="pending")
