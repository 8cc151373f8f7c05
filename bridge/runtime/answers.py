"""Answering interrupts: the engine's interrupt-facing API.

Resolve by run-scoped address or by id, through signed links, cancel one
interrupt, preview an answer without applying it, list the inbox, mint links.
Each answer is one guarded transaction applying a pure decision from
:mod:`bridge.core.resolution`. :class:`Answers` is mixed into
:class:`~bridge.runtime.engine.Engine`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from bridge.core import kinds
from bridge.core.auth import Principal
from bridge.core.cancellation import cancel_decision
from bridge.core.clock import Clock
from bridge.core.decisions.common import Answer, AnswerCheck
from bridge.core.errors import InterruptNotFoundError, ValidationError
from bridge.core.records import InterruptDecision, InterruptRecord, RunRecord
from bridge.core.resolution import answer_decision
from bridge.core.tokens import TokenClaims, TokenSigner, kid_for, new_secret, token_expiry
from bridge.core.views import inbox_item, interrupt_view, token_inspection
from bridge.runtime.telemetry import interrupt_resolving
from bridge.store.base import Claim, MutationResult, Store

if TYPE_CHECKING:
    from bridge.runtime.config import EngineConfig


class AskService(Protocol):
    """Answers ``ask`` questions put to an approval while it stays pending."""

    async def answer(self, record: InterruptRecord, question: str, asked_by: str) -> str:
        """The answer streamed back to the person who asked."""


class RecordingAskService:
    """The default: records the question and answers from what the approval carries."""

    async def answer(self, record: InterruptRecord, question: str, asked_by: str) -> str:
        data = record.payload.get("data", {})
        parts = [f"Your question is recorded on the approval \u201c{data.get('title', '')}\u201d."]
        if data.get("description"):
            parts.append(str(data["description"]))
        if data.get("artifactData") is not None:
            text = json.dumps(data["artifactData"], ensure_ascii=False)
            parts.append(f"Artifact {data.get('artifactId')}: {text[:400]}{'…' if len(text) > 400 else ''}")
        return " ".join(parts)


class Answers:
    """Interrupt-facing methods of the engine (a mixin of :class:`~bridge.runtime.engine.Engine`)."""

    store: Store
    clock: Clock
    config: EngineConfig
    signer: TokenSigner | None
    ask_service: AskService
    instance_id: str
    answer_checks: dict[str, AnswerCheck]
    _token_secrets: list[tuple[str, str]]

    if TYPE_CHECKING:  # provided by Engine

        async def visible_run(self, run_id: str, principal: Principal) -> RunRecord: ...

        def _after_mutation(self, result: MutationResult) -> None: ...

    @property
    def claim(self) -> Claim:
        """Lease a run a mutation wakes to this instance in that same transaction."""
        return Claim(self.instance_id, self.config.lease_ms)

    async def load_signing_keys(self) -> None:
        """Load the link-signing keys (creating the first one in the store if there is none)."""
        now = self.clock.now_ms()
        if self._token_secrets:
            secrets_by_kid = dict(self._token_secrets)
            self.signer = TokenSigner(secrets_by_kid, self._token_secrets[0][0])
            return
        stored = await self.store.signing_keys()
        if not stored:
            secret = new_secret()
            await self.store.add_signing_key(kid_for(secret), secret, now, activate=True)
            stored = await self.store.signing_keys()
        active = [k for k, _, a in stored if a] or [stored[-1][0]]
        self.signer = TokenSigner({k: s for k, s, _ in stored}, active[0])

    async def rotate_signing_key(self) -> str:
        """Make a new signing key active; older ones keep verifying until retired."""
        secret = new_secret()
        kid = kid_for(secret)
        await self.store.add_signing_key(kid, secret, self.clock.now_ms(), activate=True)
        self._token_secrets = []
        await self.load_signing_keys()
        return kid

    def _signer(self) -> TokenSigner:
        if self.signer is None:
            raise RuntimeError("the engine is not started")
        return self.signer

    def mint_token(
        self, record: InterruptRecord, intent: str = "resolve", *, subject: str | None = None, ttl_ms: int | None = None
    ) -> tuple[str, int]:
        """A signed link for an interrupt: 30 minutes by default, never past its deadline."""
        expires = token_expiry(self.clock.now_ms(), record.deadline_ms, ttl_ms or self.config.token_ttl_ms)
        token = self._signer().mint(record.run_id, record.node_id, record.interrupt_id, expires, intent, subject)
        return token, expires

    def interrupt_view(
        self, record: InterruptRecord, *, base_url: str = "", link: str | None = "resolve"
    ) -> dict[str, Any]:
        """An interrupt with a fresh signed link of intent ``link`` while it is open (none for ``None``)."""
        if link is not None and record.open:
            token, expires = self.mint_token(record, link)
            view = interrupt_view(record, token=token, token_expires_ms=expires, base_url=base_url)
            view["tokenIntent"] = link
            return view
        return interrupt_view(record)

    @staticmethod
    def link_for(principal: Principal) -> str:
        """The link a principal may be handed: ``resolve`` only if it could answer with its key."""
        return "resolve" if principal.has_scope("approvals:respond") else "inspect"

    async def interrupt_at(self, run_id: str, node_id: str, principal: Principal) -> InterruptRecord:
        """The latest interrupt at a run-scoped address, visible to the principal."""
        await self.visible_run(run_id, principal)
        record = await self.store.interrupt_at(run_id, node_id)
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
        limits = self.config.ask_limits
        limits.check_room(record.state.get("askExchanges", []), None, question, "")
        return limits.clip_answer(await self.ask_service.answer(record, question, asked_by))

    async def resolve(
        self,
        principal: Principal,
        value: Any,
        *,
        run_id: str | None = None,
        node_id: str | None = None,
        interrupt_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Answer an interrupt by run-scoped address (or id). One guarded transaction.

        Returns ``{runId, nodeId, interruptId, status, …}``: ``resolved`` when the
        interrupt settled, ``pending`` when a quorum vote or an ``ask`` left it open.
        """
        principal.require("approvals:respond")
        if run_id is not None:
            await self.visible_run(run_id, principal)
        if interrupt_id is not None:
            current = await self.store.get_interrupt(interrupt_id)
            if current is None or principal.tenant not in (current.tenant, "*"):
                raise InterruptNotFoundError(f"no interrupt {interrupt_id!r}")
        else:
            assert run_id is not None and node_id is not None
            current = await self.store.interrupt_at(run_id, node_id)
            if current is None:
                raise InterruptNotFoundError(f"no interrupt at node {node_id!r} of run {run_id!r}")
            interrupt_id = None if kinds.kind_of(current.kind).turn else current.interrupt_id
        answer = Answer(
            principal=principal,
            value=value,
            surface="run",
            ask_answer=await self._ask_answer(current, value, principal.id),
            idempotency_key=idempotency_key,
            checks=self.answer_checks,
            ask_limits=self.config.ask_limits,
        )
        return await self._apply_answer(answer, interrupt_id=interrupt_id, run_id=run_id, node_id=node_id)

    async def preview_answer(self, principal: Principal, value: Any, *, interrupt_id: str) -> None:
        """Check an answer without applying it: raises exactly what :meth:`resolve` would.

        The decision is pure, so it can be taken on the current rows outside a
        transaction; a concurrent change can still make the real answer fail.
        """
        answer = Answer(
            principal=principal,
            value=value,
            surface="run",
            ask_answer="(preview)",
            checks=self.answer_checks,
            ask_limits=self.config.ask_limits,
        )
        await self._preview(principal, interrupt_id, answer_decision(answer, self.clock.now_ms(), self.clock.new_id))

    async def preview_cancel(self, principal: Principal, interrupt_id: str) -> None:
        """Check a cancellation without applying it: raises what :meth:`cancel_interrupt` would."""
        await self._preview(principal, interrupt_id, cancel_decision(principal, self.clock.now_ms(), self.clock.new_id))

    async def _preview(self, principal: Principal, interrupt_id: str, decide: InterruptDecision) -> None:
        principal.require("approvals:respond")
        record = await self.store.get_interrupt(interrupt_id)
        if record is None or principal.tenant not in (record.tenant, "*"):
            raise InterruptNotFoundError(f"no interrupt {interrupt_id!r}")
        run = await self.store.load_run(record.run_id)
        assert run is not None
        mutation = decide(record, run)
        if mutation.error is not None:
            raise mutation.error

    async def open_interrupts(self, run_id: str, *, with_children: bool = True) -> list[InterruptRecord]:
        """Open, answerable interrupts of a run (and, by default, of its active child runs)."""
        records = [r for r in await self.store.run_interrupts(run_id, open_only=True) if kinds.kind_of(r.kind).listed]
        if with_children:
            for child in await self.store.child_runs(run_id):
                if not child.terminal:
                    records += await self.open_interrupts(child.run_id)
        return records

    async def _apply_answer(
        self, answer: Answer, *, interrupt_id: str | None, run_id: str | None, node_id: str | None
    ) -> dict[str, Any]:
        now = self.clock.now_ms()
        with interrupt_resolving("resolve", **{"openwop.interrupt_id": interrupt_id, "openwop.node_id": node_id}):
            if interrupt_id is not None:
                result = await self.store.mutate_interrupt(
                    answer_decision(answer, now, self.clock.new_id), now, interrupt_id=interrupt_id, claim=self.claim
                )
            else:
                result = await self.store.mutate_interrupt(
                    answer_decision(answer, now, self.clock.new_id),
                    now,
                    run_id=run_id,
                    node_id=node_id,
                    claim=self.claim,
                )
        self._after_mutation(result)
        record = result.interrupt
        assert record is not None
        body: dict[str, Any] = {
            "runId": record.run_id,
            "nodeId": record.node_id,
            "interruptId": record.interrupt_id,
            "kind": record.kind,
        }
        body.update(result.result or {})
        if body.get("status") == "resolved" and record.resolution:
            body["resumeValue"] = record.resolution.get("resumeValue")
        return body

    async def verify_token(self, token: str) -> tuple[TokenClaims, InterruptRecord]:
        """Check a signed link and find its interrupt (404/410 on bad or expired links).

        A link signed with a key this instance has not seen yet (rotated on another
        instance) reloads the keys from the store once before giving up.
        """
        try:
            claims = self._signer().verify(token, self.clock.now_ms())
        except InterruptNotFoundError:
            if self._token_secrets:
                raise
            await self.load_signing_keys()
            claims = self._signer().verify(token, self.clock.now_ms())
        record = await self.store.get_interrupt(claims.interrupt_id)
        if record is None or record.run_id != claims.run_id:
            raise InterruptNotFoundError("no interrupt answers to this link")
        return claims, record

    async def inspect_token(self, token: str, *, base_url: str = "") -> dict[str, Any]:
        """What a signed link points at (409 once it is used, 410 when gone)."""
        claims, record = await self.verify_token(token)
        if not record.open and not kinds.kind_of(record.kind).turn:
            from bridge.core.decisions.common import closed_error

            error = closed_error(record, "token")
            raise error
        view = token_inspection(record)
        view["intent"] = claims.intent
        view["tokenExpiresAt"] = (
            claims.expires_at_ms
            and interrupt_view(record, token=token, token_expires_ms=claims.expires_at_ms, base_url=base_url)[
                "tokenExpiresAt"
            ]
        )
        if claims.subject:
            view["subject"] = claims.subject
        return view

    async def resolve_token(
        self,
        token: str,
        value: Any,
        principal: Principal | None = None,
        *,
        idempotency_key: str | None = None,
        verified: tuple[TokenClaims, InterruptRecord] | None = None,
    ) -> dict[str, Any]:
        """Answer through a signed link (``POST /v1/interrupts/{token}``); ``verified`` is
        what :meth:`verify_token` already returned for it."""
        claims, record = verified or await self.verify_token(token)
        who = claims.subject or (principal.id if principal else "signed-link")
        answer = Answer(
            principal=principal,
            value=value,
            surface="token",
            token_subject=claims.subject,
            token_intent=claims.intent,
            ask_answer=await self._ask_answer(record, value, who),
            idempotency_key=idempotency_key,
            checks=self.answer_checks,
            ask_limits=self.config.ask_limits,
        )
        return await self._apply_answer(answer, interrupt_id=record.interrupt_id, run_id=None, node_id=None)

    async def cancel_interrupt(
        self, principal: Principal, interrupt_id: str, reason: str = "cancelled"
    ) -> dict[str, Any]:
        """Cancel one interrupt: approvals fail closed, other kinds raise InterruptCancelledError."""
        principal.require("approvals:respond")
        now = self.clock.now_ms()
        result = await self.store.mutate_interrupt(
            cancel_decision(principal, now, self.clock.new_id, reason), now, interrupt_id=interrupt_id, claim=self.claim
        )
        self._after_mutation(result)
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
        page = await self.store.inbox(principal.tenant, kind=kind, status=status, limit=limit, cursor=cursor)
        now = self.clock.now_ms()
        items = []
        for record in page.items:
            url = None
            if record.open:
                token, _ = self.mint_token(record, "inspect")
                url = f"{base_url}/v1/interrupts/{token}"
            items.append(inbox_item(record, now, url))
        return {"items": items, "nextCursor": page.next_cursor}
