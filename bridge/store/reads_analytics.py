"""The reads of the decision report, written once for both stores (see :mod:`openwop_bridge.store.reads`).

One statement per report: the tenant's range of ``interrupts_settled`` for the window, in settling order,
cut at the cap; for each row the few resolution fields the report needs (never the whole documents), and
its notices looked up in the ``outbox_interrupt`` index. No statement reads every run or every interrupt.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from openwop_bridge.core.decision_stats import VOTES_READ, SettledInterrupt, SettledPage
from openwop_bridge.core.notices import POLICY_CHANNEL
from openwop_bridge.store.codec import SQLITE, Dialect

#: The resolution's and state's fields each dialect extracts: resolvedBy, action, whether the resume value's
#: ``reason`` is ``cancelled``, the first votes of an approval as a JSON array of ``{voter, action, at, cancelled}``
#: (a vote's feedback, edits and reasons stay in the database), and how many votes it holds.
_SQLITE_FIELDS = (
    "json_extract(i.resolution, '$.resolvedBy'), json_extract(i.resolution, '$.action'), "
    "CASE WHEN json_extract(i.resolution, '$.resumeValue.reason') = 'cancelled' THEN 'cancelled' END, "
    "(SELECT json_group_array(json_object('voter', json_extract(v.value, '$.voter'), "
    "'action', json_extract(v.value, '$.action'), 'at', json_extract(v.value, '$.at'), "
    "'cancelled', json(CASE WHEN json_extract(v.value, '$.reason') = 'cancelled' THEN 'true' ELSE 'false' END))) "
    f"FROM (SELECT value FROM json_each(i.state, '$.votes') WHERE type = 'object' LIMIT {VOTES_READ}) v), "
    "CASE WHEN json_type(i.state, '$.votes') = 'array' THEN json_array_length(i.state, '$.votes') ELSE 0 END"
)
_POSTGRES_FIELDS = (
    "i.resolution->>'resolvedBy', i.resolution->>'action', "
    "CASE WHEN i.resolution->'resumeValue'->>'reason' = 'cancelled' THEN 'cancelled' END, "
    "(SELECT json_agg(json_build_object('voter', v->>'voter', 'action', v->>'action', 'at', v->>'at', "
    "'cancelled', coalesce(v->>'reason' = 'cancelled', false))) FROM (SELECT e.v FROM json_array_elements("
    "CASE WHEN json_typeof(i.state->'votes') = 'array' THEN i.state->'votes' END) e(v) "
    f"WHERE json_typeof(e.v) = 'object' LIMIT {VOTES_READ}) x), "
    "CASE WHEN json_typeof(i.state->'votes') = 'array' THEN json_array_length(i.state->'votes') ELSE 0 END"
)
#: A notice to a person about the row's interrupt (webhooks and the bridge's own policy notices are not).
#: PostgreSQL's ``interrupts.interrupt_id`` compares bytewise (``COLLATE "C"``) and ``outbox.interrupt_id`` in the
#: database's collation: the join names the outbox's, or ``outbox_interrupt`` could not answer it.
_TO_A_PERSON = "o.interrupt_id=i.interrupt_id{collate} AND o.channel NOT IN ('webhook', %s)"


def settled_sql(dialect: Dialect, *, after: bool) -> str:
    """The statement of :meth:`AnalyticsReads.settled_interrupts` (neutral placeholders)."""
    fields = _SQLITE_FIELDS if dialect is SQLITE else _POSTGRES_FIELDS
    person = _TO_A_PERSON.format(collate="" if dialect is SQLITE else ' COLLATE "default"')
    # A row-value comparison, so that a page seeks into ``interrupts_settled`` instead of walking to it.
    keyset = " AND (i.resolved_at, i.interrupt_id) > (%s, %s)" if after else ""
    return (
        f"SELECT i.interrupt_id, i.workflow_id, i.kind, i.status, i.requested_at, i.resolved_at, {fields}, "
        f"(SELECT MIN(o.attempted_at) FROM outbox o WHERE {person} AND o.status='delivered'), "
        f"EXISTS (SELECT 1 FROM outbox o WHERE {person} AND o.status='dead') "
        f"FROM interrupts i WHERE i.tenant=%s AND i.resolved_at >= %s AND i.resolved_at < %s{keyset} "
        "ORDER BY i.resolved_at, i.interrupt_id LIMIT %s"
    )


class AnalyticsReads:
    """:class:`~openwop_bridge.store.contract.analytics.AnalyticsStore` for both dialects."""

    _dialect: Dialect

    @abstractmethod
    async def _rows(self, neutral: str, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        """Every row of a neutral statement (:meth:`openwop_bridge.store.reads.Reads._rows`)."""

    async def settled_interrupts(
        self, tenant: str, from_ms: int, to_ms: int, limit: int, *, after: tuple[int, str] | None = None
    ) -> SettledPage:
        rows = await self._rows(
            settled_sql(self._dialect, after=after is not None),
            (POLICY_CHANNEL, POLICY_CHANNEL, tenant, from_ms, to_ms, *(after or ()), limit + 1),
        )
        parse = self._dialect.json_in
        settled = []
        for r in rows[:limit]:
            votes = parse(r[9]) if r[9] is not None else []
            settled.append(
                SettledInterrupt(
                    interrupt_id=r[0],
                    workflow_id=r[1],
                    kind=r[2],
                    status=r[3],
                    requested_at=int(r[4]),
                    resolved_at=int(r[5]),
                    resolved_by=None if r[6] is None else str(r[6]),
                    action=None if r[7] is None else str(r[7]),
                    reason=r[8],
                    votes=votes if isinstance(votes, list) else [],
                    first_notice_at=None if r[11] is None else int(r[11]),
                    undeliverable=bool(r[12]),
                    votes_cut=int(r[10] or 0) > VOTES_READ,
                )
            )
        return SettledPage(settled, more=len(rows) > limit)
