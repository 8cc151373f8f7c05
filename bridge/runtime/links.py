"""Signed links: the signing keys, and the tokens minted and checked with them.

A link is a signed token naming one interrupt and an intent (``resolve`` or
``inspect``), valid for 30 minutes by default and never past the interrupt's
deadline. On a gate that needs several approvals (a quorum) every link names the
person it is for (its ``subject``): views mint one per reader, and a resolve link
without a subject is never minted for it.

Links are not stored. A view (snapshot, interrupt detail, inbox) hands out the link
issued at the start of the current window, one of :data:`LINK_WINDOWS` in a link's
lifetime: every read in a window gets the same link, each link handed out has most
of its lifetime left, and at most ``LINK_WINDOWS + 1`` are alive at once for one
(interrupt, reader, intent), however often it is read.

Keys are either given to the engine (``token_secrets``) or kept in the store, where a
rotation on one instance reaches every other. Keys for other uses
(:meth:`LinkService.derived_keys`) are derived from them and follow their rotation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from openwop_bridge.core import approvals, kinds
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.decisions.common import closed_error
from openwop_bridge.core.errors import InterruptNotFoundError, ValidationError
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.core.tokens import TokenClaims, TokenSigner, kid_for, new_secret, token_expiry
from openwop_bridge.core.views import interrupt_view, token_inspection
from openwop_bridge.runtime.kernel import Kernel

#: A view's link is issued at the start of one of this many windows of a link's lifetime.
LINK_WINDOWS = 6


class LinkService:
    """Signing keys and signed links over one engine (see the module docstring)."""

    def __init__(
        self,
        kernel: Kernel,
        token_secrets: Iterable[tuple[str, str]] = (),
        *,
        keys_loaded: Callable[[TokenSigner], Awaitable[None]] | None = None,
    ) -> None:
        self._k = kernel
        self.signer: TokenSigner | None = None
        self._token_secrets = list(token_secrets)
        #: Told the keys each time they are (re)loaded: whoever derives keys of their own from them.
        self._keys_loaded = keys_loaded

    @property
    def keys_given(self) -> bool:
        """Whether the keys were given to the engine (and so never reloaded from the store)."""
        return bool(self._token_secrets)

    async def load_signing_keys(self) -> None:
        """Load the link-signing keys (creating the first one in the store if there is none)."""
        if self._token_secrets:
            secrets_by_kid = dict(self._token_secrets)
            self.signer = TokenSigner(secrets_by_kid, self._token_secrets[0][0])
        else:
            await self._load_stored()
        if self._keys_loaded is not None and self.signer is not None:
            await self._keys_loaded(self.signer)

    async def _load_stored(self) -> None:
        now = self._k.clock.now_ms()
        stored = await self._k.store.signing_keys()
        if not stored:
            secret = new_secret()
            await self._k.store.add_signing_key(kid_for(secret), secret, now, activate=True)
            stored = await self._k.store.signing_keys()
        active = [k for k, _, a in stored if a] or [stored[-1][0]]
        self.signer = TokenSigner({k: s for k, s, _ in stored}, active[0])

    async def rotate_signing_key(self) -> str:
        """Make a new signing key active; older ones keep verifying until retired."""
        secret = new_secret()
        kid = kid_for(secret)
        await self._k.store.add_signing_key(kid, secret, self._k.clock.now_ms(), activate=True)
        self._token_secrets = []
        await self.load_signing_keys()
        return kid

    async def retire_signing_key(self, kid: str) -> None:
        """Stop a signing key from verifying: links signed with it are refused from now on."""
        await self._k.store.retire_signing_key(kid, self._k.clock.now_ms())
        if not self._token_secrets:
            await self.load_signing_keys()

    def derived_keys(self, purpose: str) -> list[bytes]:
        """Keys for another use, derived from the signing keys (active first): they rotate and retire with them.

        A surface sealing its own state (MCP's ``requestState``) seals with the first and opens with
        any; after a rotation the previous key's state still opens until that key is retired.
        """
        return self._signer().derived_keys(purpose)

    async def signing_key_ids(self) -> list[tuple[str, bool]]:
        """The stored signing keys' ids, oldest first, each with whether it is the one that signs."""
        return [(kid, active) for kid, _, active in await self._k.store.signing_keys()]

    def _signer(self) -> TokenSigner:
        if self.signer is None:
            raise RuntimeError("the engine is not started")
        return self.signer

    @staticmethod
    def names_its_reader(record: InterruptRecord) -> bool:
        """Whether links to this interrupt name the person they are for: a quorum gate counts people."""
        return kinds.kind_of(record.kind).votes and approvals.counts_people(record.payload.get("data", {}))

    def mint_token(
        self,
        record: InterruptRecord,
        intent: str = "resolve",
        *,
        subject: str | None = None,
        ttl_ms: int | None = None,
        on_behalf: str | None = None,
    ) -> tuple[str, int]:
        """A new signed link for an interrupt: 30 minutes by default, never past its deadline.

        A resolve link for a quorum gate must name its ``subject`` (400 otherwise). ``on_behalf``: the
        delegator ``subject`` stands in for (a delegate's copy of a notice); answered through a delegation.
        """
        self._check_subject(record, intent, subject)
        expires = token_expiry(self._k.clock.now_ms(), record.deadline_ms, ttl_ms or self._k.config.token_ttl_ms)
        token = self._signer().mint(
            record.run_id, record.node_id, record.interrupt_id, expires, intent, subject, on_behalf
        )
        return token, expires

    def view_token(self, record: InterruptRecord, intent: str, reader: str | None) -> tuple[str, int] | None:
        """The link a view hands ``reader`` (see the module docstring): the same one for every read in a window.

        On a quorum gate it names ``reader``; without a reader there is none (None).
        """
        subject = reader if self.names_its_reader(record) else None
        if subject is None and self.names_its_reader(record):
            return None
        self._check_subject(record, intent, subject)
        ttl = self._k.config.token_ttl_ms
        window = max(ttl // LINK_WINDOWS, 1)
        now = self._k.clock.now_ms()
        expires = token_expiry(now - now % window, record.deadline_ms, ttl)
        token = self._signer().mint(record.run_id, record.node_id, record.interrupt_id, expires, intent, subject)
        return token, expires

    def _check_subject(self, record: InterruptRecord, intent: str, subject: str | None) -> None:
        if intent == "resolve" and not subject and self.names_its_reader(record):
            required = approvals.required_approvals(record.payload.get("data", {}))
            raise ValidationError(
                f"this gate needs {required} approvals from different people: a resolve link for it must name "
                "its subject (the person it is for)"
            )

    def interrupt_view(
        self,
        record: InterruptRecord,
        *,
        base_url: str = "",
        link: str | None = "resolve",
        reader: str | None = None,
    ) -> dict[str, Any]:
        """An interrupt with the signed link of intent ``link`` a view hands ``reader`` while it is open
        (none for ``None``; on a quorum gate, none without a reader: see :meth:`view_token`)."""
        minted = None if link is None or not record.open else self.view_token(record, link, reader)
        if minted is None:
            return interrupt_view(record)
        token, expires = minted
        view = interrupt_view(record, token=token, token_expires_ms=expires, base_url=base_url)
        view["tokenIntent"] = link
        return view

    @staticmethod
    def link_for(principal: Principal) -> str:
        """The link a principal may be handed: ``resolve`` only if it could answer with its key."""
        return "resolve" if principal.has_scope("approvals:respond") else "inspect"

    async def verify_token(self, token: str) -> tuple[TokenClaims, InterruptRecord]:
        """Check a signed link and find its interrupt (404/410 on bad or expired links).

        A link signed with a key this instance has not seen yet (rotated on another
        instance) reloads the keys from the store once before giving up.
        """
        try:
            claims = self._signer().verify(token, self._k.clock.now_ms())
        except InterruptNotFoundError:
            if self._token_secrets:
                raise
            await self.load_signing_keys()
            claims = self._signer().verify(token, self._k.clock.now_ms())
        record = await self._k.store.get_interrupt(claims.interrupt_id)
        if record is None or record.run_id != claims.run_id:
            raise InterruptNotFoundError("no interrupt answers to this link")
        return claims, record

    async def inspect_token(self, token: str, *, base_url: str = "") -> dict[str, Any]:
        """What a signed link points at (409 once it is used, 410 when gone)."""
        claims, record = await self.verify_token(token)
        if not record.open and not kinds.kind_of(record.kind).turn:
            raise closed_error(record, "token")
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
        if claims.on_behalf:
            view["onBehalfOf"] = claims.on_behalf
        return view
