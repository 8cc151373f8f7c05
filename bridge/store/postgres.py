"""The shared store: PostgreSQL, for several bridge instances on one database.

Same contract and semantics as :class:`~openwop_bridge.store.sqlite.SqliteStore`;
what changes is how exclusivity is obtained. Every write is one transaction on
a pooled connection (psycopg 3, async). A transaction that changes a run locks
the run's row first (``SELECT … FOR UPDATE``) and only then touches its
interrupts and events, so the ``pending`` guard, the ``epoch`` fence, the
``wake`` check and sequence numbering all happen under that one lock, and two
writers of one run always queue in the same order. A commit that wakes a parent
locks the parent second: locks only ever go from a run to its parent, never
back.

Other instances hear about committed work through ``LISTEN/NOTIFY``: each
transaction sends, from inside itself, one notice per run it touched, naming
the sending instance, whether events were appended and, when the run was
woken, its owner (the only instance with anything to do). See :meth:`listen`.

Reads live in :mod:`openwop_bridge.store.pg_reads`, row mapping in
:mod:`openwop_bridge.store.pg_sql`, the order in which callers resume and the
notices in :mod:`openwop_bridge.store.pg_tx`, the listener in :mod:`openwop_bridge.store.pg_listen`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import orjson
import psycopg
from psycopg import AsyncConnection, errors
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from openwop_bridge.core.notices import NoticePlanning
from openwop_bridge.core.records import InterruptDecision, InterruptRecord, Mutation, RunRecord
from openwop_bridge.store import pg_answer
from openwop_bridge.store import pg_sql as q
from openwop_bridge.store.base import (
    IDEMPOTENCY_COLS,
    IDEMPOTENCY_PRUNE,
    AnswerStepResult,
    Claim,
    IdempotencyRecord,
    RunCommit,
    idempotency_from_row,
)
from openwop_bridge.store.codec import POSTGRES, RUN_COLS, TERMINAL_SQL
from openwop_bridge.store.migrations import POSTGRES_MIGRATIONS, check_version
from openwop_bridge.store.pg_batch import Batch, run_plan
from openwop_bridge.store.pg_listen import Listener
from openwop_bridge.store.pg_reads import PostgresReads
from openwop_bridge.store.pg_tx import ReturnOrder, Tx, redact
from openwop_bridge.store.steps import Plan
from openwop_bridge.store.writes import Writes

log = logging.getLogger("openwop_bridge.store.postgres")

T = TypeVar("T")
Conn = AsyncConnection[Any]

RETRIES = 5  # attempts of a transaction PostgreSQL aborted as a deadlock victim


class PostgresStore(Writes, PostgresReads):
    """The :class:`~openwop_bridge.store.base.Store` on a PostgreSQL database shared by many instances.

    ``notice_planning``: who plans the notices its run commits owe
    (:class:`~openwop_bridge.core.notices.NoticePlanning`;
    an engine's ``engine.notify`` registers on it), an empty one of its own when not given.
    """

    single_instance = False  # several instances share the database
    transient_errors: tuple[type[BaseException], ...] = (psycopg.OperationalError, PoolTimeout)

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, notice_planning: NoticePlanning | None = None
    ) -> None:
        self.notice_planning = notice_planning or NoticePlanning()
        self._conninfo = url
        self.location = url
        self._min_size = min_size
        self._max_size = max_size
        self._pool_: AsyncConnectionPool | None = None
        self._idle = []
        self._instance = f"store_{secrets.token_hex(6)}"  # replaced by the engine's id in listen()
        self._listener: Listener | None = None
        self._order = ReturnOrder()
        self._commits = 0

    @property
    def commits(self) -> int:
        """Transactions this store object committed (each durable before it returns)."""
        return self._commits

    @property
    def url(self) -> str:
        """The connection URL as given; it may hold a password, so log :attr:`display_url` instead."""
        return self._conninfo

    @property
    def display_url(self) -> str:
        """The connection URL with its password hidden, for logs and messages."""
        return redact(self._conninfo)

    # --- lifecycle ----------------------------------------------------------

    async def _connect(self, **kwargs: Any) -> Conn:
        try:
            return await AsyncConnection.connect(self._conninfo, autocommit=True, **kwargs)
        except psycopg.OperationalError as exc:
            raise RuntimeError(f"cannot connect to PostgreSQL at {self.display_url}: {_one_line(exc)}") from exc

    def reserve(self) -> None:
        """Nothing to claim: instances share the database."""

    async def exists(self) -> bool:
        """Whether the database is reachable and holds the bridge's schema (nothing is created)."""
        conn = await self._connect()
        try:
            cur = await conn.execute("SELECT to_regclass('meta') IS NOT NULL")
            row = await cur.fetchone()
        finally:
            await conn.close()
        return bool(row and row[0])

    async def open(self) -> None:
        """Connect, create or migrate the schema, and open the connection pool."""
        conn = await self._connect()
        try:
            await self._migrate(conn)
        except errors.InsufficientPrivilege as exc:
            raise RuntimeError(
                f"cannot create the bridge's tables in {self.display_url}: {_one_line(exc)}; "
                "the role needs CREATE on its schema the first time (PostgreSQL 15 and later give it on schema "
                "public only to the database's owner): use a database the role owns, or GRANT CREATE ON SCHEMA "
                "public TO the role"
            ) from exc
        except psycopg.Error as exc:
            raise RuntimeError(
                f"cannot create or migrate the bridge's tables in {self.display_url}: {_one_line(exc)}"
            ) from exc
        finally:
            await conn.close()

        async def configure(conn: Conn) -> None:
            set_json_loads(orjson.loads, conn)

        pool = AsyncConnectionPool(
            self._conninfo,
            min_size=self._min_size,
            max_size=self._max_size,
            kwargs={"autocommit": True},
            configure=configure,
            open=False,
            name="openwop-bridge",
        )
        try:
            await pool.open(wait=True, timeout=30)
        except Exception as exc:
            await pool.close()
            raise RuntimeError(f"cannot open a connection pool to PostgreSQL at {self.display_url}: {exc}") from exc
        self._pool_ = pool

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None
        if self._pool_ is not None:
            await self._return_idle()
            await self._pool_.close()
            self._pool_ = None

    @staticmethod
    async def _migrate(conn: Conn) -> None:
        # One transaction under an advisory lock: instances starting together
        # migrate once, and a failed migration leaves the previous version intact.
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (q.MIGRATION_LOCK,))
            await conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            cur = await conn.execute("SELECT value FROM meta WHERE key='schema_version'")
            row = await cur.fetchone()
            current = int(row[0]) if row else 0
            check_version(current, len(POSTGRES_MIGRATIONS))
            for version, script in enumerate(POSTGRES_MIGRATIONS[current:], start=current + 1):
                for statement in script:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO meta(key, value) VALUES('schema_version', %s) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (str(version),),
                )

    async def _transaction(self, work: Callable[[Conn, Tx], Awaitable[T]]) -> T:
        """Run ``work`` in one transaction and send its notices from inside it (see :meth:`_retried`)."""

        async def attempt(tx: Tx) -> T:
            async with self._connection() as conn, conn.transaction():
                result = await work(conn, tx)
                if tx.outbox.notices:
                    await conn.execute(q.NOTIFY, (q.CHANNEL, tx.outbox.payloads(self._instance)))
            return result

        return await self._retried(attempt)

    async def _plan(self, make: Callable[[], Plan[T]], *, held_back: bool = False) -> T:
        """Run a plan in one transaction (a fresh plan for each attempt, see :meth:`_retried`).

        Its statements are bound here and sent in few messages (see :mod:`openwop_bridge.store.pg_batch`):
        ``BEGIN``, the statements nobody waits for, the notices and ``COMMIT`` travel together,
        and the commit is durable once the message holding ``COMMIT`` was answered. With
        ``held_back``, the plan's row locks take their place in the return order only then
        (see :meth:`~openwop_bridge.store.pg_tx.Tx.granted`).
        """

        async def attempt(tx: Tx) -> T:
            # A transaction an error leaves open or aborted is rolled back as the pool takes its connection back.
            async with self._connection() as conn:
                batch = Batch(conn)
                batch.add("BEGIN")
                result = await run_plan(batch, tx, self._planned(make()))
                if tx.outbox.notices:
                    batch.add(q.NOTIFY, (q.CHANNEL, tx.outbox.payloads(self._instance)))
                batch.add("COMMIT")
                await batch.send()
            tx.granted()
            return result

        return await self._retried(attempt, held_back=held_back)

    async def _retried(self, attempt: Callable[[Tx], Awaitable[T]], *, held_back: bool = False) -> T:
        """Run one transaction, and return in the order of the run row locks it took (see :class:`ReturnOrder`).

        PostgreSQL may abort a transaction to break a deadlock; nothing of it
        was committed, so it is run again from the start.
        """
        attempts = 0
        while True:
            tx = Tx(self._order, held_back=held_back)
            try:
                result = await attempt(tx)
                self._commits += 1
            except (errors.DeadlockDetected, errors.SerializationFailure):
                tx.release()
                attempts += 1
                if attempts >= RETRIES:
                    raise
                log.warning("transaction aborted by PostgreSQL (attempt %d of %d); retrying", attempts, RETRIES)
                await asyncio.sleep(0.01 * attempts)
                continue
            except BaseException:
                tx.release()
                raise
            try:
                for run_id, ticket in tx.tickets:
                    await self._order.turn(run_id, ticket)
            finally:
                tx.release()
            return result

    async def answer_and_step(
        self,
        seen: tuple[RunRecord, InterruptRecord],
        decided: Mutation,
        decide: InterruptDecision,
        now_ms: int,
        claim: Claim,
        step: RunCommit | None,
    ) -> AnswerStepResult:
        """The answer and its step in one message, guarded by the rows ``seen`` (see
        :mod:`openwop_bridge.store.pg_answer`);
        when a guard misses, the shared plan's two messages, which decide again on the rows they find."""
        if pg_answer.guardable(seen):
            try:
                answered = await self._plan(
                    lambda: pg_answer.answer_guarded(self._dialect, seen, decided, now_ms, claim, step), held_back=True
                )
            except errors.InvalidTextRepresentation as exc:
                if not pg_answer.missed(exc):
                    raise
            else:
                return answered
        return await super().answer_and_step(seen, decided, decide, now_ms, claim, step)

    # --- signing keys -------------------------------------------------------

    async def add_signing_key(self, kid: str, secret: str, now_ms: int, *, activate: bool) -> None:
        async def work(conn: Conn, _: Tx) -> None:
            # Serialise key changes: two instances activating at once leave exactly one active key.
            await conn.execute("LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE")
            if activate:
                await conn.execute("UPDATE signing_keys SET active=FALSE WHERE active")
            await conn.execute(
                "INSERT INTO signing_keys(kid, secret, created_at, active) VALUES(%s,%s,%s,%s) "
                "ON CONFLICT(kid) DO UPDATE SET active=excluded.active, retired_at=NULL",
                (kid, secret, now_ms, activate),
            )

        await self._transaction(work)

    # --- runs ---------------------------------------------------------------

    async def claim_run(self, run_id: str, owner: str, now_ms: int, lease_ms: int) -> RunRecord | None:
        # One statement: of two instances claiming together, the second re-checks
        # the row after the first commits and finds it taken.
        row = await self._one(
            f"UPDATE runs SET owner=%s, lease_until=%s, epoch=epoch+1 WHERE run_id=%s "
            f"AND status NOT IN {TERMINAL_SQL} "
            f"AND (owner IS NULL OR owner=%s OR lease_until < %s) RETURNING {RUN_COLS}",
            (owner, now_ms + lease_ms, run_id, owner, now_ms),
        )
        return POSTGRES.run(row) if row else None

    async def renew_leases(self, owner: str, run_ids: Sequence[str], now_ms: int, lease_ms: int) -> int:
        until = now_ms + lease_ms
        ids = list(run_ids)
        if not ids:
            return 0
        # Rows locked right now (a commit in flight) are skipped rather than waited
        # for while holding the others, which could deadlock with a commit that
        # also wakes a parent; each of them is then renewed on its own.
        renewed = await self._all(
            "UPDATE runs SET lease_until=%s WHERE owner=%s AND run_id IN "
            "(SELECT run_id FROM runs WHERE owner=%s AND run_id = ANY(%s::text[]) FOR UPDATE SKIP LOCKED) "
            "RETURNING run_id",
            (until, owner, owner, ids),
        )
        done = {r[0] for r in renewed}
        count = len(done)
        for run_id in ids:
            if run_id in done:
                continue
            row = await self._one(
                "UPDATE runs SET lease_until=%s WHERE run_id=%s AND owner=%s RETURNING run_id", (until, run_id, owner)
            )
            count += row is not None
        return count

    async def release_owned(self, owner: str) -> list[str]:
        """Give up every lease ``owner`` holds (a graceful stop) and tell every instance: the first to claim
        each run resumes it now rather than once its lease would have run out."""

        async def work(conn: Conn, tx: Tx) -> list[str]:
            cur = await conn.execute(
                "UPDATE runs SET owner=NULL, lease_until=NULL, needs_work=TRUE "
                f"WHERE owner=%s AND status NOT IN {TERMINAL_SQL} RETURNING run_id",
                (owner,),
            )
            released = [str(row[0]) for row in await cur.fetchall()]
            for run_id in released:
                tx.wake(run_id, q.ANY_INSTANCE)
            return released

        return await self._transaction(work)

    async def reset_owners(self) -> int:
        """Forget every lease. Only safe when no other instance uses the database;
        the engine never calls it on this store."""
        rows = await self._all("UPDATE runs SET owner=NULL, lease_until=NULL WHERE owner IS NOT NULL RETURNING 1")
        return len(rows)

    # --- adapters' state ----------------------------------------------------

    # --- Idempotency-Key records ---------------------------------------------

    async def idempotency_begin(
        self, key_id: str, digest: str, owner: str, now_ms: int, *, lease_ms: int, ttl_ms: int
    ) -> IdempotencyRecord | None:
        async def work(conn: Conn, _: Tx) -> IdempotencyRecord | None:
            await conn.execute(
                "DELETE FROM idempotency WHERE key_id IN (SELECT key_id FROM idempotency WHERE expires_at <= %s "
                "ORDER BY expires_at LIMIT %s FOR UPDATE SKIP LOCKED)",
                (now_ms, IDEMPOTENCY_PRUNE),
            )
            fresh = (key_id, digest, owner, now_ms + lease_ms, now_ms, now_ms + ttl_ms)
            # A concurrent insert of the same key waits here for the other transaction, then does nothing.
            cur = await conn.execute(
                "INSERT INTO idempotency(key_id, digest, owner, lease_until, created_at, expires_at) "
                "VALUES(%s,%s,%s,%s,%s,%s) ON CONFLICT (key_id) DO NOTHING",
                fresh,
            )
            if cur.rowcount == 1:
                return None
            cur = await conn.execute(
                f"SELECT {IDEMPOTENCY_COLS} FROM idempotency WHERE key_id=%s FOR UPDATE", (key_id,)
            )
            row = await cur.fetchone()
            if row is None:  # deleted (expired or released) since the insert looked
                await conn.execute(
                    "INSERT INTO idempotency(key_id, digest, owner, lease_until, created_at, expires_at) "
                    "VALUES(%s,%s,%s,%s,%s,%s)",
                    fresh,
                )
                return None
            found = idempotency_from_row(row)
            stalled = found.pending and (found.lease_until_ms or 0) < now_ms
            if found.expires_at_ms <= now_ms or (stalled and found.digest == digest):
                await conn.execute(
                    "UPDATE idempotency SET digest=%s, owner=%s, lease_until=%s, status=NULL, headers=NULL, "
                    "body=NULL, created_at=%s, expires_at=%s WHERE key_id=%s",
                    (digest, owner, now_ms + lease_ms, now_ms, now_ms + ttl_ms, key_id),
                )
                return None
            return found

        return await self._transaction(work)

    # --- notifications between instances ---------------------------------------

    async def listen(
        self,
        instance_id: str,
        on_wake: Callable[[str], None],
        on_events: Callable[[str], None],
        on_deadline: Callable[[int | None], None] | None = None,
    ) -> None:
        """Hear what other instances commit: ``on_wake(run_id)`` for runs this
        instance owns that were woken elsewhere, ``on_events(run_id)`` for runs
        that gained events elsewhere, ``on_deadline(at_ms)`` for deadlines written
        elsewhere (see :mod:`openwop_bridge.store.pg_listen`).

        Returns once ``LISTEN`` is in place. Notices sent from here on carry
        ``instance_id`` so that this instance skips its own.
        """
        self._instance = instance_id
        self._listener = Listener(
            instance_id=instance_id,
            connect=lambda: self._connect(application_name="openwop-bridge-listen"),
            query=self._all,
            on_wake=on_wake,
            on_events=on_events,
            where=self.display_url,
            on_deadline=on_deadline,
        )
        await self._listener.start()


def _one_line(exc: psycopg.Error) -> str:
    """What the server said went wrong, on one line (its primary message, else the error's text joined)."""
    return exc.diag.message_primary or " ".join(str(exc).split()) or type(exc).__name__
