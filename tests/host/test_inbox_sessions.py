"""The inbox's sessions in the store, on SQLite and PostgreSQL: idle and absolute expiry, last use written at
most once a minute, revocation, purging, the per-person cap, and ids kept only as hashes."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openwop_bridge.core.auth import Principal, Subject
from openwop_bridge.core.clock import SystemClock
from openwop_bridge.core.errors import BridgeError, RateLimitedError
from openwop_bridge.host.web.sessions import MAX_PER_PERSON, NAMESPACE, TOUCH_MS, InboxSessions
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store.base import Store
from openwop_bridge.store.sqlite import SqliteStore
from tests import pg

IDLE_MS = 10 * 60_000
ABSOLUTE_MS = 60 * 60_000


class MovedClock(SystemClock):
    """The real clock, moved forward by the test."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms

    def advance(self, ms: int) -> None:
        self.offset_ms += ms


def _person(name: str, issuer: str = "https://idp.example") -> Principal:
    subject = Subject(issuer=issuer, subject_id=f"sub-{name}", lane="session", name=name.title(), email=None)
    scopes, roles = frozenset({"interrupts:read"}), frozenset({"approvers"})
    return Principal(id=name, tenant="default", scopes=scopes, roles=roles, subject=subject)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        yield SqliteStore(tmp_path / "sessions.db")
        return
    from openwop_bridge.store.postgres import PostgresStore

    name, url = pg.create_database()
    try:
        yield PostgresStore(url)
    finally:
        pg.drop_database(name)


@pytest.fixture
async def clocked(store: Store) -> AsyncIterator[tuple[InboxSessions, MovedClock, Engine]]:
    clock = MovedClock()
    engine = Engine(store, clock=clock)
    await engine.start()
    try:
        yield InboxSessions(engine, idle_ms=IDLE_MS, absolute_ms=ABSOLUTE_MS), clock, engine
    finally:
        await engine.stop()


async def _refusal(sessions: InboxSessions, session_id: str) -> str:
    with pytest.raises(BridgeError) as caught:
        await sessions.principal(session_id)
    assert caught.value.status == 401
    return caught.value.code


async def test_a_session_is_stored_by_the_hash_of_its_id(clocked: tuple[InboxSessions, MovedClock, Engine]) -> None:
    sessions, _, engine = clocked
    session_id = await sessions.open(_person("alice"))
    assert len(session_id) >= 43
    state = engine.adapter_state(NAMESPACE)
    assert await state.get(session_id) is None
    stored = await state.get(hashlib.sha256(session_id.encode()).hexdigest())
    assert stored["principal"]["id"] == "alice" and session_id not in str(stored)
    found = await sessions.principal(session_id)
    assert found == _person("alice")
    assert await _refusal(sessions, session_id + "x") == "unauthenticated"


async def test_idle_expiry_and_last_use_written_at_most_once_a_minute(
    clocked: tuple[InboxSessions, MovedClock, Engine],
) -> None:
    sessions, clock, engine = clocked
    session_id = await sessions.open(_person("alice"))
    state = engine.adapter_state(NAMESPACE)
    key = hashlib.sha256(session_id.encode()).hexdigest()
    opened = (await state.get(key))["lastMs"]
    clock.advance(TOUCH_MS // 2)
    await sessions.principal(session_id)
    assert (await state.get(key))["lastMs"] == opened  # not a write per request
    clock.advance(TOUCH_MS // 2 + 1)
    await sessions.principal(session_id)
    touched = (await state.get(key))["lastMs"]
    assert touched > opened
    # Idle just under the limit: still valid; then past it: refused.
    clock.advance(IDLE_MS - 1000)
    await sessions.principal(session_id)
    clock.advance(IDLE_MS + 1)
    assert await _refusal(sessions, session_id) == "unauthenticated"


async def test_absolute_expiry_however_much_it_is_used(clocked: tuple[InboxSessions, MovedClock, Engine]) -> None:
    sessions, clock, _ = clocked
    session_id = await sessions.open(_person("alice"))
    used = 0
    while used + IDLE_MS // 2 < ABSOLUTE_MS:
        clock.advance(IDLE_MS // 2)
        used += IDLE_MS // 2
        await sessions.principal(session_id)
    clock.advance(ABSOLUTE_MS - used + 1)
    assert await _refusal(sessions, session_id) == "unauthenticated"


async def test_a_revoked_session_is_refused_as_revoked_then_purged(
    clocked: tuple[InboxSessions, MovedClock, Engine],
) -> None:
    sessions, clock, engine = clocked
    alice, bob = await sessions.open(_person("alice")), await sessions.open(_person("bob"))
    assert await sessions.revoke(alice)
    assert await sessions.revoke(alice)  # signing out twice is harmless
    assert not await sessions.revoke("unknown")
    assert await _refusal(sessions, alice) == "credential_revoked"
    assert (await sessions.principal(bob)).id == "bob"
    # Both ended by time (bob idle, alice revoked long ago): purged, then simply unknown.
    clock.advance(IDLE_MS + TOUCH_MS + 1)
    assert await sessions.purge(force=True) == 2
    assert await engine.adapter_state(NAMESPACE).scan("", limit=10) == []
    assert await _refusal(sessions, alice) == "unauthenticated"
    # A session in use is never purged.
    carol = await sessions.open(_person("carol"))
    clock.advance(IDLE_MS - TOUCH_MS)
    await sessions.principal(carol)
    clock.advance(2 * TOUCH_MS + 1)
    assert await sessions.purge(force=True) == 0
    assert (await sessions.principal(carol)).id == "carol"


async def test_one_person_holds_a_bounded_number_of_sessions(
    clocked: tuple[InboxSessions, MovedClock, Engine],
) -> None:
    sessions, clock, _ = clocked
    opened = [await sessions.open(_person("alice")) for _ in range(MAX_PER_PERSON)]
    with pytest.raises(RateLimitedError):
        await sessions.open(_person("alice"))
    # Another person, or the same name at another issuer, is not held back.
    await sessions.open(_person("bob"))
    await sessions.open(_person("alice", issuer="https://other.example"))
    # Once alice's sessions have ended they are purged when she signs in again.
    clock.advance(IDLE_MS + TOUCH_MS + 1)
    assert await _refusal(sessions, opened[0]) == "unauthenticated"
    assert await sessions.open(_person("alice"))


async def test_the_host_secret_is_made_once_and_shared(clocked: tuple[InboxSessions, MovedClock, Engine]) -> None:
    sessions, _, engine = clocked
    first = await sessions.secret()
    other = InboxSessions(engine, idle_ms=IDLE_MS, absolute_ms=ABSOLUTE_MS)
    assert await other.secret() == first and len(first) >= 32
