"""The outbox's transactions, written once for both stores as plans (see :mod:`openwop_bridge.store.plan`).

Notices are written by :func:`with_notices`, which wraps a run's write plan: where the plan yields a
:class:`~openwop_bridge.store.steps.Planned` step (the events and interrupts it commits for a run), the
store's planners are asked for drafts and the rows go into the same transaction. The worker's
claims, settlements and the dead-letter reads are plans of their own.

A claim leases notices to one worker and moves their ``next_attempt`` to the lease's end, so a
notice held by a killed instance comes due again for the others once its lease runs out, and one
index (``outbox_due``) answers both "due" and "free". ``attempt`` counts claims: each attempt of
a notice has its own number, whoever makes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from openwop_bridge.core.clock import ulid
from openwop_bridge.core.notices import (
    ERROR_MAX,
    POLICY_CHANNEL,
    UNDELIVERABLE_NS,
    Notice,
    NoticeDraft,
    NoticePlanner,
    OutboxLimits,
)
from openwop_bridge.store import codec, plan_kv
from openwop_bridge.store.codec import Dialect
from openwop_bridge.store.steps import Plan, Planned, Rows, Sql

T = TypeVar("T")
log = logging.getLogger("openwop_bridge.store.outbox")

OUTBOX_COLS = "notice_id, channel, tenant, run_id, interrupt_id, recipient, payload, attempt, next_attempt, created_at"
INSERT_NOTICE = (
    "INSERT INTO outbox(notice_id, channel, tenant, run_id, interrupt_id, recipient, payload, attempt, "
    "next_attempt, status, last_error, created_at, settled_at) VALUES (%s,%s,%s,%s,%s,%s,%s::json,%s,%s,%s,%s,%s,%s)"
)
#: The reason a notice refused by a cap is dead-lettered with.
QUEUE_FULL = "queue_full"
#: The payload keys a refused notice keeps: they name what it was about (a dead-letter read shows them), not content.
LABELS = ("eventId", "eventType")
#: The payload key marking a notice refused by a cap: written content-free, it is reported (a dead letter, an
#: event, a count) by the worker's next round and never sent.
REFUSED = "$refused"


def notice_from_row(d: Dialect, row: Sequence[Any]) -> Notice:
    """A :class:`Notice` from a row of :data:`OUTBOX_COLS`."""
    return Notice(
        notice_id=row[0],
        channel=row[1],
        tenant=row[2],
        run_id=row[3],
        interrupt_id=row[4],
        recipient=row[5],
        payload=d.json_in(row[6]),
        attempt=row[7],
        not_before_ms=row[8],
        created_ms=row[9],
    )


def write_notices(
    tenant: str, run_id: str, drafts: Sequence[NoticeDraft], now_ms: int, limits: OutboxLimits
) -> Plan[list[str]]:
    """Insert ``drafts`` as queued notices (the ids they got, in order); a draft past a cap is written without
    its payload (but its :data:`LABELS`), marked :data:`REFUSED`, for the worker to report as a dead letter
    (:data:`QUEUE_FULL`)."""
    if not drafts:
        return []
    counted = yield Sql("SELECT count(*) FROM outbox WHERE tenant=%s AND status='queued'", (tenant,))
    tenant_queued = counted[0][0] if counted else 0
    per_recipient: dict[tuple[str, str], int] = {}
    rows: list[tuple[Any, ...]] = []
    ids: list[str] = []
    for draft in drafts:
        key = (draft.channel, draft.recipient)
        cap = min(limits.per_recipient, draft.recipient_cap or limits.per_recipient)
        if key not in per_recipient:
            found = yield Sql("SELECT count(*) FROM outbox WHERE channel=%s AND recipient=%s AND status='queued'", key)
            per_recipient[key] = found[0][0] if found else 0
        refused = tenant_queued >= limits.per_tenant or per_recipient[key] >= cap
        notice_id = f"ntc_{ulid(now_ms)}"
        ids.append(notice_id)
        due = now_ms if draft.not_before_ms is None else draft.not_before_ms
        labels = {k: draft.payload[k] for k in LABELS if k in draft.payload}
        payload = {REFUSED: QUEUE_FULL, **labels} if refused else draft.payload
        error = QUEUE_FULL if refused else None
        rows.append(
            (
                notice_id,
                draft.channel,
                tenant,
                run_id,
                draft.interrupt_id,
                draft.recipient,
                codec.dumps(payload),
                0,
                now_ms if refused else due,
                "queued",
                error,
                now_ms,
                None,
            )
        )
        if not refused:
            tenant_queued += 1
            per_recipient[key] += 1
    yield Sql(INSERT_NOTICE, rows, many=True)
    return ids


def _drafts(planners: Sequence[NoticePlanner], step: Planned) -> list[NoticeDraft]:
    """What every planner plans for ``step``; a planner that fails is logged and skipped, so that it never
    fails the run's own commit."""
    drafts: list[NoticeDraft] = []
    for planner in planners:
        try:
            drafts += planner(step.run, step.events, step.opened, step.now_ms)
        except Exception:
            log.exception(
                "a notice planner failed on run %s; its notices for this commit are not written", step.run.run_id
            )
    return drafts


def with_notices(
    planners: Sequence[NoticePlanner],
    limits: OutboxLimits,
    steps: Plan[T],
    written: Callable[[Sequence[NoticeDraft]], None] | None = None,
) -> Plan[T]:
    """``steps``, with the notices ``planners`` plan for each :class:`Planned` step written in its place
    (``written`` is told which, as they are written: the transaction may still fail)."""
    try:
        step = next(steps)
        while True:
            if type(step) is Planned:
                drafts = _drafts(planners, step)
                if drafts:
                    yield from write_notices(step.run.tenant, step.run.run_id, drafts, step.now_ms, limits)
                    if written is not None:
                        written(drafts)
                step = steps.send([])
            else:
                rows: Rows = yield step
                step = steps.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


#: The most lanes (a tenant's destination: ``(tenant, channel, recipient)``) one claim takes notices from.
MAX_LANES = 4_096
#: The lane after ``(tenant, channel, recipient)`` that holds queued notices, with its earliest ``next_attempt``:
#: one seek in ``outbox_lane``.
NEXT_LANE = (
    "SELECT tenant, channel, recipient, next_attempt FROM outbox WHERE status='queued' AND "
    "(tenant, channel, recipient) > (%s, %s, %s) ORDER BY tenant, channel, recipient, next_attempt LIMIT 1"
)
#: PostgreSQL: every lane holding queued notices, stepped through ``outbox_lane`` in one statement.
PG_LANES = (
    "SELECT tenant, channel, recipient FROM (WITH RECURSIVE lanes AS ((SELECT tenant, channel, recipient, "
    "next_attempt FROM outbox WHERE status='queued' ORDER BY tenant, channel, recipient, next_attempt LIMIT 1) "
    "UNION ALL SELECT n.tenant, n.channel, n.recipient, n.next_attempt FROM lanes l CROSS JOIN LATERAL (SELECT "
    "tenant, channel, recipient, next_attempt FROM outbox WHERE status='queued' AND (tenant, channel, recipient) > "
    "(l.tenant, l.channel, l.recipient) ORDER BY tenant, channel, recipient, next_attempt LIMIT 1) n) "
    "SELECT * FROM lanes) found WHERE next_attempt <= %s AND channel = ANY(%s) AND NOT (recipient = ANY(%s)) "
    "AND NOT (tenant = ANY(%s)) LIMIT %s"
)
#: PostgreSQL: up to ``k`` due notices of each lane named, oldest first (read, not locked).
PG_CANDIDATES = (
    "SELECT c.notice_id, c.tenant, c.channel, c.recipient, c.next_attempt FROM unnest(%s::text[], %s::text[], "
    "%s::text[]) AS d(tenant, channel, recipient) CROSS JOIN LATERAL (SELECT notice_id, tenant, channel, recipient, "
    "next_attempt FROM outbox o WHERE o.status='queued' AND o.tenant=d.tenant AND o.channel=d.channel "
    "AND o.recipient=d.recipient AND o.next_attempt<=%s ORDER BY o.next_attempt LIMIT %s) c"
)
#: PostgreSQL: lease the first ``limit`` of the notices named, in their order, that are still due; rows another
#: claim holds are skipped, not waited for (so claims at once share the turns).
PG_LEASE = (
    "UPDATE outbox SET lease_owner=%s, next_attempt=%s, attempt=attempt+1 WHERE notice_id IN (SELECT o.notice_id "
    "FROM unnest(%s::text[]) WITH ORDINALITY AS r(notice_id, turn) JOIN outbox o ON o.notice_id = r.notice_id "
    "WHERE o.status='queued' AND o.next_attempt<=%s ORDER BY r.turn LIMIT %s FOR UPDATE OF o SKIP LOCKED) "
    f"RETURNING {OUTBOX_COLS}"
)
LANE_CANDIDATES = (
    "SELECT notice_id, tenant, channel, recipient, next_attempt FROM outbox WHERE status='queued' AND tenant=%s "
    "AND channel=%s AND recipient=%s AND next_attempt<=%s ORDER BY next_attempt LIMIT %s"
)


def take_turns(candidates: Sequence[Sequence[Any]], limit: int | None = None) -> list[str]:
    """``candidates`` (rows ``notice_id, tenant, channel, recipient, next_attempt``; the first ``limit``), round-robin:
    each lane's oldest first, the lanes of a tenant taking turns, and the tenants taking turns, so every tenant
    with a due notice has one in the first turn, whatever another's backlog."""
    lanes: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for notice_id, tenant, channel, recipient, due in candidates:
        lanes.setdefault((tenant, channel, recipient), []).append((int(due), notice_id))
    tenants: dict[str, list[tuple[int, int, str]]] = {}
    for (tenant, _, _), queue in lanes.items():
        for lane_turn, (due, notice_id) in enumerate(sorted(queue)):
            tenants.setdefault(tenant, []).append((lane_turn, due, notice_id))
    ranked: list[tuple[int, int, str]] = []
    for turns in tenants.values():
        ranked += [(turn, due, notice_id) for turn, (_, due, notice_id) in enumerate(sorted(turns))]
    return [notice_id for _, _, notice_id in sorted(ranked)[:limit]]


def claim(
    d: Dialect,
    owner: str,
    now_ms: int,
    lease_ms: int,
    limit: int,
    channels: Sequence[str],
    busy: Sequence[str] = (),
    busy_tenants: Sequence[str] = (),
) -> Plan[list[Notice]]:
    """Lease up to ``limit`` due notices of ``channels`` to ``owner`` (their attempt counted now), none for the
    recipients ``busy`` nor of the tenants ``busy_tenants`` (those the owner has as many of as it may), fairly:
    the claim steps through the lanes (a tenant's destination) that hold due notices, an index seek each
    (``outbox_lane``, never a scan of the backlog), takes up to ``limit / lanes`` of each lane's oldest, and lets
    tenants, and the lanes of a tenant, take turns (:func:`take_turns`). One tenant's backlog, or one
    destination's, delays only itself. On PostgreSQL, rows another claim holds are skipped, not waited for."""
    if not channels or limit <= 0:
        return []
    if d.question_marks:
        lanes: list[tuple[str, str, str]] = []
        key: Sequence[Any] = ("", "", "")
        wanted, refused, full = frozenset(channels), frozenset(busy), frozenset(busy_tenants)
        while len(lanes) < MAX_LANES:
            found = yield Sql(NEXT_LANE, tuple(key))
            if not found:
                break
            tenant, channel, recipient, due = found[0]
            key = (tenant, channel, recipient)
            if due <= now_ms and channel in wanted and recipient not in refused and tenant not in full:
                lanes.append((tenant, channel, recipient))
        each = max(1, -(-limit // max(1, len(lanes))))
        candidates: list[Sequence[Any]] = []
        for lane in lanes:
            candidates += yield Sql(LANE_CANDIDATES, (*lane, now_ms, each))
    else:
        rows = yield Sql(PG_LANES, (now_ms, list(channels), list(busy), list(busy_tenants), MAX_LANES))
        if not rows:
            return []
        each = max(1, -(-limit // len(rows)))
        found = yield Sql(
            PG_CANDIDATES, ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], now_ms, each)
        )
        turns = take_turns(found)
        if not turns:
            return []
        claimed = yield Sql(PG_LEASE, (owner, now_ms + lease_ms, turns, now_ms, limit))
        return _oldest_first(d, claimed)
    chosen = take_turns(candidates, limit)
    if not chosen:
        return []
    claimed = yield Sql(
        "UPDATE outbox SET lease_owner=%s, next_attempt=%s, attempt=attempt+1 WHERE notice_id IN "
        f"({','.join(['%s'] * len(chosen))}) AND status='queued' RETURNING {OUTBOX_COLS}",
        (owner, now_ms + lease_ms, *chosen),
    )
    return _oldest_first(d, claimed)


def _oldest_first(d: Dialect, rows: Rows) -> list[Notice]:
    return sorted((notice_from_row(d, r) for r in rows), key=lambda n: (n.not_before_ms, n.notice_id))


#: The policies :func:`settle` writes a :data:`~openwop_bridge.core.notices.POLICY_CHANNEL` notice for
#: (``wait`` does nothing).
ACTING_POLICIES = frozenset({"fail", "escalate"})


def settle(
    d: Dialect,
    notice_id: str,
    owner: str,
    attempt: int,
    status: str,
    next_attempt_ms: int,
    error: str | None,
    now_ms: int,
) -> Plan[bool]:
    """Record an attempt's outcome: ``delivered``, ``dead``, or ``queued`` again for ``next_attempt_ms``.

    Only the holder of that attempt's lease may (False otherwise: the lease ran out and another
    worker claimed the notice again, whose outcome counts). A dead letter that completes its interrupt's
    undeliverable notices writes, in the same transaction, the notice that applies the policy
    (:func:`undeliverable_policy`).
    """
    settled = None if status == "queued" else now_ms
    rows = yield Sql(
        "UPDATE outbox SET status=%s, next_attempt=%s, lease_owner=NULL, last_error=%s, settled_at=%s, "
        "attempted_at=%s WHERE notice_id=%s AND lease_owner=%s AND attempt=%s AND status='queued' "
        "RETURNING notice_id, interrupt_id, tenant, run_id, payload",
        (
            status,
            next_attempt_ms,
            None if error is None else error[:ERROR_MAX],
            settled,
            now_ms,
            notice_id,
            owner,
            attempt,
        ),
    )
    if rows and status == "dead" and rows[0][1] is not None:
        _, interrupt_id, tenant, run_id, payload = rows[0]
        yield from undeliverable_policy(d, interrupt_id, tenant, run_id, d.json_in(payload), now_ms)
    return bool(rows)


def undeliverable_policy(
    d: Dialect, interrupt_id: str, tenant: str, run_id: str, payload: dict[str, Any], now_ms: int
) -> Plan[None]:
    """After a notice of ``interrupt_id`` died: when every first notice of it is dead (each carries ``of``, how
    many there are, and its routes' ``onUndeliverable``), mark the interrupt undeliverable
    (:data:`UNDELIVERABLE_NS`) and, when the policy acts, write the notice that applies it.

    The interrupt's row is locked first (PostgreSQL), so two instances dead-lettering its last two notices at
    once count one after the other: exactly one of them sees every notice dead.
    """
    policy, of = payload.get("onUndeliverable"), payload.get("of")
    if policy not in (*ACTING_POLICIES, "wait") or not isinstance(of, int):
        return
    if not d.question_marks:
        yield Sql("SELECT interrupt_id FROM interrupts WHERE interrupt_id=%s FOR UPDATE", (interrupt_id,))
    dead = yield Sql(
        "SELECT payload FROM outbox WHERE interrupt_id=%s AND status='dead' AND channel != %s",
        (interrupt_id, POLICY_CHANNEL),
    )
    if sum(1 for (p,) in dead if "onUndeliverable" in d.json_in(p)) != of:
        return
    marked = yield from plan_kv.kv_put(UNDELIVERABLE_NS, interrupt_id, {"policy": policy, "at": now_ms}, now_ms, True)
    if not marked or policy not in ACTING_POLICIES:
        return
    row = (
        f"ntc_{ulid(now_ms)}",
        POLICY_CHANNEL,
        tenant,
        run_id,
        interrupt_id,
        interrupt_id,
        codec.dumps({"policy": policy}),
        0,
        now_ms,
        "queued",
        None,
        now_ms,
        None,
    )
    yield Sql(INSERT_NOTICE, [row], many=True)


def release(notice_ids: Sequence[str], owner: str, next_attempt_ms: int) -> Plan[int]:
    """Give back notices ``owner`` claimed and did not attempt (their attempt is not counted); how many."""
    done = 0
    for notice_id in notice_ids:
        found = yield Sql(
            "UPDATE outbox SET lease_owner=NULL, attempt=attempt-1, next_attempt=%s "
            "WHERE notice_id=%s AND lease_owner=%s AND status='queued' RETURNING notice_id",
            (next_attempt_ms, notice_id, owner),
        )
        done += len(found)
    return done


def redrive(
    d: Dialect,
    channel: str,
    recipient: str,
    tenant: str,
    notice_ids: Sequence[str] | None,
    now_ms: int,
    limits: OutboxLimits,
    cap: int,
    limit: int,
) -> Plan[list[str]]:
    """Queue a destination's dead letters within ``tenant`` again (the ones named, or its oldest ``limit``), due now,
    their attempts counted afresh and their id and payload unchanged; the ids queued. Only letters still in the
    sink (not past ``limits.dead_ttl_ms``) that kept their payload (one refused by a cap kept none), and as many
    as the destination's queue (``cap``, ``limits.per_recipient``) and the tenant's (``limits.per_tenant``) have
    room for."""
    named = ""
    if notice_ids is not None:
        if not notice_ids:
            return []
        named = f" AND notice_id IN ({','.join(['%s'] * len(notice_ids))})"
    rows = yield Sql(
        "SELECT notice_id, payload FROM outbox WHERE channel=%s AND recipient=%s AND status='dead' AND tenant=%s "
        f"AND settled_at > %s{named} ORDER BY notice_id LIMIT %s",
        (channel, recipient, tenant, now_ms - limits.dead_ttl_ms, *(notice_ids or ()), limit),
    )
    kept = [r[0] for r in rows if REFUSED not in d.json_in(r[1])]
    if not kept:
        return []
    queued = yield Sql(
        "SELECT count(*) FROM outbox WHERE channel=%s AND recipient=%s AND status='queued'", (channel, recipient)
    )
    in_tenant = yield Sql("SELECT count(*) FROM outbox WHERE tenant=%s AND status='queued'", (tenant,))
    room = min(min(cap, limits.per_recipient) - queued[0][0], limits.per_tenant - in_tenant[0][0])
    kept = kept[: max(0, room)]
    if not kept:
        return []
    done = yield Sql(
        "UPDATE outbox SET status='queued', attempt=0, next_attempt=%s, lease_owner=NULL, last_error=NULL, "
        f"settled_at=NULL, attempted_at=NULL WHERE notice_id IN ({','.join(['%s'] * len(kept))}) AND status='dead' "
        "RETURNING notice_id",
        (now_ms, *kept),
    )
    return sorted(r[0] for r in done)


def prune(now_ms: int, limits: OutboxLimits, batch: int = 500) -> Plan[int]:
    """Delete delivered notices and dead letters past their retention, a batch at a time; returns how many."""
    gone = 0
    for status, before in (("delivered", now_ms - limits.delivered_ttl_ms), ("dead", now_ms - limits.dead_ttl_ms)):
        done = yield Sql(
            "DELETE FROM outbox WHERE notice_id IN (SELECT notice_id FROM outbox WHERE status != 'queued' AND "
            "settled_at < %s AND status = %s LIMIT %s) RETURNING notice_id",
            (before, status, batch),
        )
        gone += len(done)
    return gone
