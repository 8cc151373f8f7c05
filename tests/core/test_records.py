"""Copies of run and interrupt records (:func:`bridge.core.records.copied`)."""

from __future__ import annotations

from dataclasses import fields

from bridge.core.records import copied
from tests.core.build import approval_data, interrupt, run


def test_a_copied_record_has_every_field_and_changes_alone() -> None:
    records = [
        run(control={"cancel": {"reason": "x"}}, owner="me", epoch=3, wake=2, next_seq=9, needs_work=False),
        interrupt("approval", approval_data(), deadline_ms=5, state={"votes": []}, requested_seq=4),
    ]
    for record in records:
        copy = copied(record)
        assert copy == record and copy is not record
        for f in fields(record):
            # Documents are shared, not copied (as dataclasses.replace shares them).
            assert getattr(copy, f.name) is getattr(record, f.name)
        copy.status = "changed"
        assert record.status != "changed"
