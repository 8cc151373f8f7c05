"""Versioned schema migrations, applied by the bridge itself at start-up.

Each entry is one version; a database whose recorded version is newer than
the code knows refuses to start, naming both versions.
"""

from __future__ import annotations

#: The kind whose rows migration 4 fills, as stored then (a migration never changes with the code).
EXCHANGE = "conversation.exchange"

SQLITE_MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE signing_keys (
            kid TEXT PRIMARY KEY, secret TEXT NOT NULL, created_at INTEGER NOT NULL,
            active INTEGER NOT NULL DEFAULT 0, retired_at INTEGER)""",
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, workflow_id TEXT NOT NULL, status TEXT NOT NULL,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, spec TEXT NOT NULL, state TEXT NOT NULL,
            parent_run_id TEXT, parent_node_id TEXT, parent_visit INTEGER, child_ordinal INTEGER,
            completed_at INTEGER, next_seq INTEGER NOT NULL DEFAULT 0, owner TEXT, lease_until INTEGER,
            epoch INTEGER NOT NULL DEFAULT 0, wake INTEGER NOT NULL DEFAULT 0,
            needs_work INTEGER NOT NULL DEFAULT 1, control TEXT)""",
        "CREATE INDEX runs_needs_work ON runs(needs_work) WHERE needs_work = 1",
        "CREATE INDEX runs_parent ON runs(parent_run_id) WHERE parent_run_id IS NOT NULL",
        """CREATE UNIQUE INDEX runs_child_key ON runs(parent_run_id, parent_node_id, parent_visit, child_ordinal)
            WHERE parent_run_id IS NOT NULL""",
        "CREATE INDEX runs_tenant ON runs(tenant, created_at)",
        """CREATE TABLE events (
            run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, node_id TEXT, visit INTEGER,
            cmd INTEGER, doc TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID""",
        "CREATE INDEX events_activation ON events(run_id, node_id, visit, cmd) WHERE cmd IS NOT NULL",
        "CREATE INDEX events_type ON events(run_id, type)",
        """CREATE TABLE interrupts (
            interrupt_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, tenant TEXT NOT NULL,
            workflow_id TEXT NOT NULL, node_id TEXT NOT NULL, exec_node TEXT NOT NULL,
            visit INTEGER NOT NULL, ordinal INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL,
            status TEXT NOT NULL, payload TEXT NOT NULL, requested_at INTEGER NOT NULL, deadline INTEGER,
            resolved_at INTEGER, consumed INTEGER NOT NULL DEFAULT 0, resolution TEXT, state TEXT,
            requested_seq INTEGER)""",
        "CREATE UNIQUE INDEX interrupts_key ON interrupts(run_id, key)",
        "CREATE INDEX interrupts_addr ON interrupts(run_id, node_id, requested_at)",
        "CREATE INDEX interrupts_node ON interrupts(run_id, exec_node)",
        "CREATE INDEX interrupts_inbox ON interrupts(tenant, status, requested_at, interrupt_id)",
        "CREATE INDEX interrupts_inbox_kind ON interrupts(tenant, status, kind, requested_at, interrupt_id)",
        """CREATE INDEX interrupts_deadline ON interrupts(deadline)
            WHERE status = 'pending' AND deadline IS NOT NULL""",
        "CREATE INDEX interrupts_unconsumed ON interrupts(run_id) WHERE consumed = 0 AND status != 'pending'",
        """CREATE TABLE kv (
            namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, updated_at INTEGER NOT NULL,
            PRIMARY KEY (namespace, key)) WITHOUT ROWID""",
        """CREATE TABLE audit (
            id INTEGER PRIMARY KEY, tenant TEXT, at INTEGER NOT NULL, principal TEXT NOT NULL,
            action TEXT NOT NULL, resource TEXT NOT NULL, run_id TEXT, details TEXT)""",
        "CREATE INDEX audit_run ON audit(run_id, id)",
    ],
    # 2: Idempotency-Key records (see bridge/host/http/idempotency.py).
    [
        """CREATE TABLE idempotency (
            key_id TEXT PRIMARY KEY, digest TEXT NOT NULL, owner TEXT, lease_until INTEGER, status INTEGER,
            headers TEXT, body TEXT, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL)""",
        "CREATE INDEX idempotency_expiry ON idempotency(expires_at)",
    ],
    # 3: start-up forgets stale leases through an index, not a scan of every run; the run list's keyset
    # (created_at, run_id) is one index range.
    [
        "CREATE INDEX runs_owner ON runs(owner) WHERE owner IS NOT NULL",
        "DROP INDEX runs_tenant",
        "CREATE INDEX runs_tenant ON runs(tenant, created_at, run_id)",
    ],
    # 4: an exchange's row keeps its conversation and its answer in columns of their own, so a conversation's
    # close reads its answers from one range of an index that holds them, instead of decoding every exchange's
    # JSON (the index covers the read: no table page is read).
    [
        "ALTER TABLE interrupts ADD COLUMN conversation TEXT",
        "ALTER TABLE interrupts ADD COLUMN answer TEXT",
        f"""UPDATE interrupts SET conversation = json_extract(payload, '$.data.conversationId'),
            answer = CASE
                WHEN status != 'resolved' OR json_extract(resolution, '$.closed') IS NOT NULL
                    OR json_type(resolution, '$.resumeValue') IS NULL THEN NULL
                WHEN json_type(resolution, '$.resumeValue') IN ('true', 'false')
                    THEN json_type(resolution, '$.resumeValue')
                ELSE json_quote(json_extract(resolution, '$.resumeValue')) END
            WHERE kind = '{EXCHANGE}'""",
        """CREATE INDEX interrupts_answers ON interrupts(run_id, exec_node, conversation, visit, ordinal, key, answer)
            WHERE answer IS NOT NULL""",
    ],
    # 5: an inbox without a kind merges the listed kinds' ranges of ``interrupts_inbox_kind``, so
    # ``interrupts_inbox`` goes (one index less to write for every interrupt opened or settled); an address's
    # latest interrupt (``ORDER BY requested_at DESC, ordinal DESC``) comes off ``interrupts_addr`` unsorted.
    [
        "DROP INDEX interrupts_inbox",
        "DROP INDEX interrupts_addr",
        "CREATE INDEX interrupts_addr ON interrupts(run_id, node_id, requested_at, ordinal)",
    ],
    # 6: a run's events of some types are read from the run's range of the primary key, in order, and
    # ``events_type`` goes: every event wrote an entry to it, and on appends such an index splits a page
    # every few commits, for one read of conversation runs' snapshots.
    ["DROP INDEX events_type"],
    # 7: nothing to change here: the key-value primary key already orders keys by their bytes, which a
    # range of keys sharing a prefix (``Store.kv_scan``) reads. PostgreSQL's 7 makes its own do so.
    [],
    # 8: ``interrupts_node`` (run_id, exec_node) goes: a node's interrupts are read from the run's range of
    # ``interrupts_key`` or ``interrupts_addr`` (a run holds few interrupts besides that node's), one b-tree less
    # to write for every interrupt opened.
    ["DROP INDEX interrupts_node"],
    # 9: the outbox of notices (webhook deliveries, mails, chat messages), written with the commits they announce
    # and drained by the delivery workers; ``outbox_due`` answers "due" and "free" (a claim moves ``next_attempt``
    # to the end of its lease).
    [
        """CREATE TABLE outbox (
            notice_id TEXT PRIMARY KEY, channel TEXT NOT NULL, tenant TEXT NOT NULL, run_id TEXT NOT NULL,
            interrupt_id TEXT, recipient TEXT NOT NULL, payload TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,
            next_attempt INTEGER NOT NULL, lease_owner TEXT, status TEXT NOT NULL, last_error TEXT,
            created_at INTEGER NOT NULL, settled_at INTEGER)""",
        "CREATE INDEX outbox_due ON outbox(next_attempt) WHERE status = 'queued'",
        "CREATE INDEX outbox_tenant ON outbox(tenant) WHERE status = 'queued'",
        "CREATE INDEX outbox_recipient ON outbox(channel, recipient, status, notice_id)",
        "CREATE INDEX outbox_settled ON outbox(settled_at) WHERE status != 'queued'",
    ],
    # 10: when a notice's last attempt ended (the delivery state an interrupt shows), and its notices by
    # interrupt (that state, and the count of its dead notices as each dies).
    [
        "ALTER TABLE outbox ADD COLUMN attempted_at INTEGER",
        "CREATE INDEX outbox_interrupt ON outbox(interrupt_id, notice_id) WHERE interrupt_id IS NOT NULL",
    ],
    # 11: the queued notices by lane (tenant, destination), each lane's oldest due first: a claim steps from
    # lane to lane through it (:func:`openwop_bridge.store.plan_outbox.claim`), so one lane's backlog is one seek.
    ["CREATE INDEX outbox_lane ON outbox(tenant, channel, recipient, next_attempt) WHERE status = 'queued'"],
    # 12: the decision report (``GET /v1/analytics/decisions``) reads a tenant's interrupts settled in a window,
    # in settling order, as one range of this index (open interrupts have no ``resolved_at`` and stay out of it).
    [
        """CREATE INDEX interrupts_settled ON interrupts(tenant, resolved_at, interrupt_id)
            WHERE resolved_at IS NOT NULL"""
    ],
    # 13: the decision record (:mod:`openwop_bridge.store.plan_records`): one hash chain of signed records per
    # tenant, in its primary key's order (the last one is one seek); a decision's records by interrupt (its receipt).
    [
        """CREATE TABLE decision_records (
            tenant TEXT NOT NULL, seq INTEGER NOT NULL, record_id TEXT NOT NULL, run_id TEXT, interrupt_id TEXT,
            at INTEGER NOT NULL, body TEXT NOT NULL, hash TEXT NOT NULL, kid TEXT NOT NULL, signature TEXT NOT NULL,
            PRIMARY KEY (tenant, seq)) WITHOUT ROWID""",
        "CREATE INDEX decision_records_interrupt ON decision_records(interrupt_id, seq) WHERE interrupt_id IS NOT NULL",
    ],
]


# The same tables and indexes as SQLite. Documents are ``json``, not ``jsonb``:
# they are never queried inside, ``json`` keeps them exactly as written (key
# order, number spelling) and accepts every string, where ``jsonb`` refuses
# ``\u0000``, which answers and payloads may carry. Identifiers that order
# pages compare bytewise (``COLLATE "C"``), as in SQLite. ``runs_owner`` is the
# one index SQLite lacks: lease renewal and reconnect catch-up look runs up by
# owner, and several instances do so every few seconds.
POSTGRES_MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE signing_keys (
            kid TEXT PRIMARY KEY, secret TEXT NOT NULL, created_at BIGINT NOT NULL,
            active BOOLEAN NOT NULL DEFAULT FALSE, retired_at BIGINT)""",
        """CREATE TABLE runs (
            run_id TEXT COLLATE "C" PRIMARY KEY, tenant TEXT NOT NULL, workflow_id TEXT NOT NULL,
            status TEXT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, spec JSON NOT NULL,
            state JSON NOT NULL, parent_run_id TEXT, parent_node_id TEXT, parent_visit INTEGER, child_ordinal INTEGER,
            completed_at BIGINT, next_seq BIGINT NOT NULL DEFAULT 0, owner TEXT, lease_until BIGINT,
            epoch BIGINT NOT NULL DEFAULT 0, wake BIGINT NOT NULL DEFAULT 0,
            needs_work BOOLEAN NOT NULL DEFAULT TRUE, control JSON)""",
        "CREATE INDEX runs_needs_work ON runs(needs_work) WHERE needs_work",
        "CREATE INDEX runs_parent ON runs(parent_run_id) WHERE parent_run_id IS NOT NULL",
        """CREATE UNIQUE INDEX runs_child_key ON runs(parent_run_id, parent_node_id, parent_visit, child_ordinal)
            WHERE parent_run_id IS NOT NULL""",
        "CREATE INDEX runs_tenant ON runs(tenant, created_at)",
        "CREATE INDEX runs_owner ON runs(owner) WHERE owner IS NOT NULL",
        """CREATE TABLE events (
            run_id TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, type TEXT NOT NULL, node_id TEXT, visit INTEGER,
            cmd INTEGER, doc JSON NOT NULL, PRIMARY KEY (run_id, seq))""",
        "CREATE INDEX events_activation ON events(run_id, node_id, visit, cmd) WHERE cmd IS NOT NULL",
        "CREATE INDEX events_type ON events(run_id, type)",
        """CREATE TABLE interrupts (
            interrupt_id TEXT COLLATE "C" PRIMARY KEY, run_id TEXT COLLATE "C" NOT NULL, tenant TEXT NOT NULL,
            workflow_id TEXT NOT NULL, node_id TEXT NOT NULL, exec_node TEXT NOT NULL,
            visit INTEGER NOT NULL, ordinal INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL,
            status TEXT NOT NULL, payload JSON NOT NULL, requested_at BIGINT NOT NULL, deadline BIGINT,
            resolved_at BIGINT, consumed BOOLEAN NOT NULL DEFAULT FALSE, resolution JSON, state JSON,
            requested_seq BIGINT)""",
        "CREATE UNIQUE INDEX interrupts_key ON interrupts(run_id, key)",
        "CREATE INDEX interrupts_addr ON interrupts(run_id, node_id, requested_at)",
        "CREATE INDEX interrupts_node ON interrupts(run_id, exec_node)",
        "CREATE INDEX interrupts_inbox ON interrupts(tenant, status, requested_at, interrupt_id)",
        "CREATE INDEX interrupts_inbox_kind ON interrupts(tenant, status, kind, requested_at, interrupt_id)",
        """CREATE INDEX interrupts_deadline ON interrupts(deadline)
            WHERE status = 'pending' AND deadline IS NOT NULL""",
        "CREATE INDEX interrupts_unconsumed ON interrupts(run_id) WHERE NOT consumed AND status <> 'pending'",
        """CREATE TABLE kv (
            namespace TEXT NOT NULL, key TEXT NOT NULL, value JSON NOT NULL, updated_at BIGINT NOT NULL,
            PRIMARY KEY (namespace, key))""",
        """CREATE TABLE audit (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tenant TEXT, at BIGINT NOT NULL,
            principal TEXT NOT NULL, action TEXT NOT NULL, resource TEXT NOT NULL, run_id TEXT, details JSON)""",
        "CREATE INDEX audit_run ON audit(run_id, id)",
    ],
    [
        """CREATE TABLE idempotency (
            key_id TEXT PRIMARY KEY, digest TEXT NOT NULL, owner TEXT, lease_until BIGINT, status INTEGER,
            headers TEXT, body TEXT, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL)""",
        "CREATE INDEX idempotency_expiry ON idempotency(expires_at)",
    ],
    # 3: the run list's keyset (created_at, run_id) is one index range.
    [
        "DROP INDEX runs_tenant",
        "CREATE INDEX runs_tenant ON runs(tenant, created_at, run_id)",
    ],
    # 4: as SQLite's 4, an exchange's conversation and answer in columns of their own. The index leaves the
    # answer out: a B-tree entry has a size limit an answer may pass.
    [
        "ALTER TABLE interrupts ADD COLUMN conversation TEXT, ADD COLUMN answer JSON",
        f"""UPDATE interrupts SET conversation = payload->'data'->>'conversationId',
            answer = CASE WHEN status = 'resolved' AND (resolution->>'closed') IS NULL
                THEN resolution->'resumeValue' END
            WHERE kind = '{EXCHANGE}'""",
        """CREATE INDEX interrupts_answers ON interrupts(run_id, exec_node, conversation, visit, ordinal)
            WHERE answer IS NOT NULL""",
    ],
    # 5: as SQLite's 5.
    [
        "DROP INDEX interrupts_inbox",
        "DROP INDEX interrupts_addr",
        "CREATE INDEX interrupts_addr ON interrupts(run_id, node_id, requested_at, ordinal)",
    ],
    # 6: as SQLite's 6.
    ["DROP INDEX events_type"],
    # 7: key-value keys compare bytewise, as identifiers that order pages do: a range of keys sharing a
    # prefix (``Store.kv_scan``) is then one range of the primary key, whatever the database's collation.
    # The column's type and values stay as they are; the primary key is rebuilt in the new order.
    ['ALTER TABLE kv ALTER COLUMN key TYPE TEXT COLLATE "C"'],
    # 8: as SQLite's 8.
    ["DROP INDEX interrupts_node"],
    # 9: as SQLite's 9.
    [
        """CREATE TABLE outbox (
            notice_id TEXT COLLATE "C" PRIMARY KEY, channel TEXT NOT NULL, tenant TEXT NOT NULL,
            run_id TEXT NOT NULL, interrupt_id TEXT, recipient TEXT NOT NULL, payload JSON NOT NULL,
            attempt INTEGER NOT NULL DEFAULT 0, next_attempt BIGINT NOT NULL, lease_owner TEXT,
            status TEXT NOT NULL, last_error TEXT, created_at BIGINT NOT NULL, settled_at BIGINT)""",
        "CREATE INDEX outbox_due ON outbox(next_attempt) WHERE status = 'queued'",
        "CREATE INDEX outbox_tenant ON outbox(tenant) WHERE status = 'queued'",
        "CREATE INDEX outbox_recipient ON outbox(channel, recipient, status, notice_id)",
        "CREATE INDEX outbox_settled ON outbox(settled_at) WHERE status <> 'queued'",
    ],
    # 10: as SQLite's 10.
    [
        "ALTER TABLE outbox ADD COLUMN attempted_at BIGINT",
        "CREATE INDEX outbox_interrupt ON outbox(interrupt_id, notice_id) WHERE interrupt_id IS NOT NULL",
    ],
    # 11: as SQLite's 11.
    ["CREATE INDEX outbox_lane ON outbox(tenant, channel, recipient, next_attempt) WHERE status = 'queued'"],
    # 12: as SQLite's 12.
    [
        """CREATE INDEX interrupts_settled ON interrupts(tenant, resolved_at, interrupt_id)
            WHERE resolved_at IS NOT NULL"""
    ],
    # 13: as SQLite's 13.
    [
        """CREATE TABLE decision_records (
            tenant TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, record_id TEXT NOT NULL, run_id TEXT,
            interrupt_id TEXT, at BIGINT NOT NULL, body TEXT NOT NULL, hash TEXT NOT NULL, kid TEXT NOT NULL,
            signature TEXT NOT NULL,
            PRIMARY KEY (tenant, seq))""",
        "CREATE INDEX decision_records_interrupt ON decision_records(interrupt_id, seq) WHERE interrupt_id IS NOT NULL",
    ],
]


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer bridge than this one."""


def check_version(found: int, known: int) -> None:
    """Refuse to run against a schema newer than this code knows."""
    if found > known:
        raise SchemaTooNewError(
            f"the database schema is version {found}, but this openwop-bridge only knows up to "
            f"version {known}; upgrade openwop-bridge (or point --db at another database)"
        )
