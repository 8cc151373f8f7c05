"""Copies of records (:func:`openwop_bridge.core.records.replaced`): :func:`dataclasses.replace`, cheaper."""

from __future__ import annotations

import dataclasses
from dataclasses import fields

from openwop_bridge.core.records import RunRecord, replaced
from openwop_bridge.store.base import RunCommit
from tests.core.build import approval_data, interrupt, run


def test_a_copy_of_a_record_has_every_field_and_changes_alone() -> None:
    records = [
        run(control={"cancel": {"reason": "x"}}, owner="me", epoch=3, wake=2, next_seq=9, needs_work=False),
        interrupt("approval", approval_data(), deadline_ms=5, state={"votes": []}, requested_seq=4),
    ]
    for record in records:
        copy = replaced(record)
        assert copy == record and copy is not record
        for f in fields(record):
            # Documents are shared, not copied (as dataclasses.replace shares them).
            assert getattr(copy, f.name) is getattr(record, f.name)
        copy.status = "changed"
        assert record.status != "changed"


@dataclasses.dataclass(slots=True)
class _KeywordOnly:
    a: int
    b: int = dataclasses.field(default=0, kw_only=True)


def _run() -> RunRecord:
    return RunRecord("run_1", "default", "wf", "running", 1, 2, {"s": 1}, {"t": 2}, next_seq=4, owner="A", epoch=3)


def test_replaced_changes_only_the_named_fields_of_a_copy() -> None:
    run = _run()
    after = replaced(run, status="completed", next_seq=9, owner=None)
    assert after == dataclasses.replace(run, status="completed", next_seq=9, owner=None)
    assert after is not run and run == _run()


def test_replaced_of_nothing_is_an_equal_copy_and_works_for_other_records() -> None:
    commit = RunCommit("run_1", "A", 3, 10, consume=["int_1", "int_2"])
    assert replaced(commit) == commit
    assert replaced(commit, consume=["int_2"]) == dataclasses.replace(commit, consume=["int_2"])


def test_replaced_falls_back_for_fields_init_does_not_take_by_position() -> None:
    assert replaced(_KeywordOnly(1, b=2), a=5) == _KeywordOnly(5, b=2)
