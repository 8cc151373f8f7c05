"""The key-value, idempotency and signing-key write plans (see :mod:`openwop_bridge.store.steps`)."""

from __future__ import annotations

from typing import Any

from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.records import has_nul
from openwop_bridge.store import codec
from openwop_bridge.store.steps import Plan, Recorded, Sql


def kv_put(namespace: str, key: str, value: Any, now_ms: int, only_if_absent: bool) -> Plan[bool]:
    """Store an adapter's JSON value; with ``only_if_absent``, False when the key exists."""
    return (yield from kv_put_text(namespace, key, codec.dumps(value), now_ms, only_if_absent))


def kv_put_text(namespace: str, key: str, text: str, now_ms: int, only_if_absent: bool) -> Plan[bool]:
    """:func:`kv_put` of a value already encoded."""
    if has_nul((namespace, key)):
        raise ValidationError("a stored key must not contain U+0000")
    on_conflict = (
        "DO NOTHING"
        if only_if_absent
        else "(namespace, key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at"
    )
    rows = yield Sql(
        f"INSERT INTO kv(namespace, key, value, updated_at) VALUES(%s,%s,%s::json,%s) ON CONFLICT {on_conflict} "
        "RETURNING 1",
        (namespace, key, text, now_ms),
    )
    return bool(rows) or not only_if_absent


def kv_put_capped(
    namespace: str,
    key: str,
    value: dict[str, Any],
    now_ms: int,
    field: str,
    cap: int,
    *,
    lock: bool,
    recorded: Recorded | None = None,
) -> Plan[bool]:
    """Store a new value (its key absent) unless ``namespace`` holds ``cap`` values whose top-level ``field`` equals
    this one's already; False (nothing stored) then, or when the key exists.

    The count and the insert are one transaction, serialized against every other such put of the same ``field``
    value: with ``lock`` (PostgreSQL) under a transaction-scoped advisory lock named by the namespace, the field
    and its value, so instances on one database count one after the other; SQLite's one writer serializes them
    anyway. The count reads the namespace's rows (its primary-key range): meant for small namespaces.
    ``recorded``: the decision records the put appends when it stores the value.
    """
    if not field.isidentifier():
        raise ValueError(f"not a field name: {field!r}")
    group = str(value.get(field))
    if lock:
        name = f"kv {namespace} {field} {group}"
        yield Sql("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (name,))
    counted = yield Sql(f"SELECT count(*) FROM kv WHERE namespace=%s AND value->>'{field}' = %s", (namespace, group))
    if counted and counted[0][0] >= cap:
        return False
    stored = yield from kv_put(namespace, key, value, now_ms, True)
    if stored and recorded is not None:
        yield recorded
    return stored


def kv_replace(
    namespace: str, key: str, expected: Any, value: Any, now_ms: int, recorded: Recorded | None = None
) -> Plan[bool]:
    """Compare-and-set an adapter's value: replace it only while it is still ``expected`` (compared as stored text);
    ``recorded``: the decision records the replacement appends when it happens."""
    replaced = yield from kv_replace_text(namespace, key, codec.dumps(expected), codec.dumps(value), now_ms)
    if replaced and recorded is not None:
        yield recorded
    return replaced


def kv_replace_text(namespace: str, key: str, expected: str, text: str, now_ms: int) -> Plan[bool]:
    """:func:`kv_replace` of values already encoded."""
    rows = yield Sql(
        "UPDATE kv SET value=%s::json, updated_at=%s WHERE namespace=%s AND key=%s AND CAST(value AS TEXT)=%s "
        "RETURNING 1",
        (text, now_ms, namespace, key, expected),
    )
    return bool(rows)


def kv_forget_if(namespace: str, key: str, expected: Any) -> Plan[bool]:
    """Compare-and-delete an adapter's value: delete it only while it is still ``expected`` (as stored text)."""
    rows = yield Sql(
        "DELETE FROM kv WHERE namespace=%s AND key=%s AND CAST(value AS TEXT)=%s RETURNING 1",
        (namespace, key, codec.dumps(expected)),
    )
    return bool(rows)


def kv_forget_before(namespace: str, before_ms: int) -> Plan[int]:
    """Delete a namespace's values last written before ``before_ms``; returns how many."""
    rows = yield Sql("DELETE FROM kv WHERE namespace=%s AND updated_at<%s RETURNING 1", (namespace, before_ms))
    return len(rows)


def idempotency_finish(key_id: str, owner: str, status: int, headers: dict[str, str], body: str) -> Plan[bool]:
    """Record the final response of the request ``owner`` handled; False if it no longer holds the key."""
    rows = yield Sql(
        "UPDATE idempotency SET status=%s, headers=%s, body=%s, owner=NULL, lease_until=NULL "
        "WHERE key_id=%s AND owner=%s AND status IS NULL RETURNING key_id",
        (status, codec.dumps(headers), body, key_id, owner),
    )
    return bool(rows)


def idempotency_release(key_id: str, owner: str) -> Plan[None]:
    """Forget a pending record."""
    yield Sql("DELETE FROM idempotency WHERE key_id=%s AND owner=%s AND status IS NULL", (key_id, owner))


def retire_signing_key(kid: str, now_ms: int) -> Plan[None]:
    """Stop a key from verifying."""
    yield Sql("UPDATE signing_keys SET retired_at=%s, active=FALSE WHERE kid=%s", (now_ms, kid))
