"""The decision record's reads for both dialects: pages of a chain, and one interrupt's records."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from openwop_bridge.store.contract.records import StoredRecord

_COLS = "tenant, seq, body, hash, kid, signature"


def _stored(rows: Sequence[Sequence[Any]]) -> list[StoredRecord]:
    return [StoredRecord(str(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5])) for r in rows]


class RecordReads:
    """:class:`~openwop_bridge.store.contract.records.DecisionRecordStore`'s reads, for both dialects."""

    @abstractmethod
    async def _rows(self, neutral: str, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        """Every row of a neutral statement (:meth:`openwop_bridge.store.reads.Reads._rows`)."""

    async def decision_records(
        self, tenant: str | None, limit: int, *, after: tuple[str, int] | None = None
    ) -> list[StoredRecord]:
        if limit < 1:
            return []
        where: list[str] = []
        args: list[Any] = []
        if tenant is not None:
            where.append("tenant=%s")
            args.append(tenant)
            if after is not None:
                where.append("seq>%s")
                args.append(after[1] if after[0] == tenant else (0 if after[0] < tenant else 2**62))
        elif after is not None:
            where.append("(tenant>%s OR (tenant=%s AND seq>%s))")
            args += [after[0], after[0], after[1]]
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return _stored(
            await self._rows(
                f"SELECT {_COLS} FROM decision_records{clause} ORDER BY tenant, seq LIMIT %s", (*args, limit)
            )
        )

    async def interrupt_decision_records(self, interrupt_id: str, limit: int) -> list[StoredRecord]:
        rows = await self._rows(
            f"SELECT {_COLS} FROM decision_records WHERE interrupt_id=%s ORDER BY seq LIMIT %s", (interrupt_id, limit)
        )
        return _stored(rows)
