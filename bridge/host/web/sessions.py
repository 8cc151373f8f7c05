"""The inbox's sessions: who signed in through the identity provider, kept in the store.

A session is opened when a person finishes signing in (:mod:`openwop_bridge.host.web.signin`).
Its id is 32 random bytes that only the person's cookie holds; the store keeps the session under
the SHA-256 of the id (namespace :data:`NAMESPACE`, through the engine's key-value space), so every
instance sharing the database knows it, a restart keeps it, and the database alone cannot
present it. A session ends:

- ``idleMs`` after its last use (the last use is written at most once per :data:`TOUCH_MS`, not on
  every request);
- ``absoluteMs`` after it was opened, however much it is used;
- when the person signs out: the session is marked revoked, and presenting it again is refused
  with ``credential_revoked`` (an id the store does not know is a plain ``401``).

Sessions ended by time are deleted (at most once per :data:`PURGE_INTERVAL_MS`, on use); a revoked
one stays until it would have been idle for ``idleMs``. One person holds at most
:data:`MAX_PER_PERSON` sessions at once.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from openwop_bridge.core.auth import Principal, Subject
from openwop_bridge.core.errors import RateLimitedError, UnauthenticatedError
from openwop_bridge.identity.errors import CredentialRevokedError
from openwop_bridge.runtime.engine import Engine

__all__ = ["MAX_PER_PERSON", "NAMESPACE", "PURGE_INTERVAL_MS", "TOUCH_MS", "InboxSessions"]

#: The key-value namespace of the sessions.
NAMESPACE = "ui.session"
#: The namespace of the host secret sealing sign-ins in progress (shared by the instances of one database).
SECRET_NAMESPACE = "ui.session.secret"
#: How often, at most, a session's last use is written.
TOUCH_MS = 60_000
#: How often, at most, ended sessions are deleted.
PURGE_INTERVAL_MS = 60_000
#: The most sessions one person (issuer and subject) holds at once.
MAX_PER_PERSON = 20
#: The longest session id read from a cookie.
_MAX_ID = 128


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


def _person(subject: Subject) -> str:
    return hashlib.sha256(f"{subject.issuer}\x00{subject.subject_id}".encode()).hexdigest()[:32]


def _dump(principal: Principal) -> dict[str, Any]:
    subject = principal.subject
    assert subject is not None  # a session's principal comes from a provider's ID token
    return {
        "id": principal.id,
        "tenant": principal.tenant,
        "scopes": sorted(principal.scopes),
        "roles": sorted(principal.roles),
        "subject": {
            "issuer": subject.issuer,
            "subjectId": subject.subject_id,
            "lane": subject.lane,
            "name": subject.name,
            "email": subject.email,
        },
    }


def _load(data: dict[str, Any]) -> Principal:
    subject = data["subject"]
    return Principal(
        id=data["id"],
        tenant=data["tenant"],
        scopes=frozenset(data["scopes"]),
        roles=frozenset(data["roles"]),
        subject=Subject(
            issuer=subject["issuer"],
            subject_id=subject["subjectId"],
            lane=subject["lane"],
            name=subject.get("name"),
            email=subject.get("email"),
        ),
    )


class InboxSessions:
    """The sessions of one host, in its engine's store (see the module's docstring)."""

    def __init__(self, engine: Engine, *, idle_ms: int, absolute_ms: int) -> None:
        self._state = engine.adapter_state(NAMESPACE)
        self._secrets = engine.adapter_state(SECRET_NAMESPACE)
        self._clock = engine.clock
        self.idle_ms = idle_ms
        self.absolute_ms = absolute_ms
        self._purged_at = -PURGE_INTERVAL_MS
        self._secret: bytes | None = None

    async def secret(self) -> bytes:
        """The host secret sign-ins in progress are sealed with: made once, shared through the database."""
        if self._secret is None:
            await self._secrets.put("seal", {"secret": secrets.token_urlsafe(32)}, only_if_absent=True)
            found = await self._secrets.get("seal")
            self._secret = str(found["secret"]).encode()
        return self._secret

    async def open(self, principal: Principal) -> str:
        """A new session for ``principal``; returns its id (for the cookie only)."""
        await self.purge(force=True)
        session_id = secrets.token_urlsafe(32)
        now = self._clock.now_ms()
        assert principal.subject is not None
        record = {
            "principal": _dump(principal),
            "person": _person(principal.subject),
            "createdMs": now,
            "lastMs": now,
            "revoked": False,
        }
        stored = await self._state.put_capped(_key(session_id), record, field="person", cap=MAX_PER_PERSON)
        if not stored:
            raise RateLimitedError(
                f"you hold {MAX_PER_PERSON} inbox sessions already: sign out of one, or wait for one to end",
                max(1, self.idle_ms // 1000),
            )
        return session_id

    async def principal(self, session_id: str) -> Principal:
        """Who the session ``session_id`` signs in; ``credential_revoked`` when signed out, else 401 when ended."""
        if not session_id or len(session_id) > _MAX_ID:
            raise UnauthenticatedError("the inbox session is not known: sign in again")
        key = _key(session_id)
        record = await self._state.get(key)
        if not isinstance(record, dict):
            raise UnauthenticatedError("the inbox session is not known: sign in again")
        if record.get("revoked"):
            raise CredentialRevokedError("this inbox session was signed out: sign in again")
        now = self._clock.now_ms()
        if now - int(record["createdMs"]) > self.absolute_ms or now - int(record["lastMs"]) > self.idle_ms:
            raise UnauthenticatedError("the inbox session has expired: sign in again")
        if now - int(record["lastMs"]) >= TOUCH_MS:
            # Another request (on this instance or another) may have touched it meanwhile: either write stands.
            await self._state.replace(key, record, {**record, "lastMs": now})
        await self.purge()
        return _load(record["principal"])

    async def revoke(self, session_id: str) -> bool:
        """Sign the session out (it is refused with ``credential_revoked`` from now on); False if not known."""
        if not session_id or len(session_id) > _MAX_ID:
            return False
        key = _key(session_id)
        for _ in range(5):
            record = await self._state.get(key)
            if not isinstance(record, dict):
                return False
            if record.get("revoked") or await self._state.replace(key, record, {**record, "revoked": True}):
                return True
        return False

    async def purge(self, *, force: bool = False) -> int:
        """Delete the sessions that ended: idle for ``idleMs`` (so also every expired or revoked one once it
        has been idle that long). Runs at most once per :data:`PURGE_INTERVAL_MS` unless ``force``."""
        now = self._clock.now_ms()
        if not force and now - self._purged_at < PURGE_INTERVAL_MS:
            return 0
        self._purged_at = now
        return await self._state.forget_older_than(self.idle_ms + TOUCH_MS)
