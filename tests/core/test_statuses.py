"""The one table of how a run's and an interrupt's status may change (:mod:`openwop_bridge.core.statuses`)."""

from __future__ import annotations

import json
from importlib import resources
from typing import get_args

import pytest

from openwop_bridge.core import kinds, statuses
from openwop_bridge.core.errors import StatusTransitionError
from openwop_bridge.core.statuses import (
    INTERRUPT_TRANSITIONS,
    RUN_TRANSITIONS,
    InterruptStatus,
    RunStatus,
)


def test_the_run_statuses_are_those_of_the_run_snapshot_schema() -> None:
    schema = json.loads(resources.files("openwop_bridge.spec").joinpath("schemas/run-snapshot.schema.json").read_text())
    enum = schema["properties"]["status"]["enum"]
    assert set(get_args(RunStatus)) == set(enum)


def test_every_status_has_a_row_and_goes_only_to_statuses() -> None:
    assert set(RUN_TRANSITIONS) == set(get_args(RunStatus))
    assert set(INTERRUPT_TRANSITIONS) == set(get_args(InterruptStatus))
    assert all(targets <= statuses.RUN_STATUSES for targets in RUN_TRANSITIONS.values())
    assert all(targets <= statuses.INTERRUPT_STATUSES for targets in INTERRUPT_TRANSITIONS.values())


def test_a_kinds_waiting_status_is_a_run_status() -> None:
    assert {kinds.waiting_status(name) for name in kinds.KINDS} <= statuses.LIVE_RUN


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("pending", "waiting-approval"),
        ("running", "waiting-input"),
        ("waiting-approval", "running"),
        ("waiting-approval", "waiting-external"),
        ("waiting-input", "cancelling"),
        ("cancelling", "cancelled"),
        ("running", "completed"),
        ("running", "running"),
    ],
)
def test_an_allowed_run_change_passes(old: str, new: str) -> None:
    statuses.check_run(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("completed", "running"),
        ("failed", "cancelling"),
        ("cancelled", "waiting-approval"),
        ("cancelling", "running"),
        ("cancelling", "waiting-approval"),
        ("running", "pending"),
        ("running", "finished"),
        ("finished", "finished"),
    ],
)
def test_a_forbidden_run_change_raises(old: str, new: str) -> None:
    with pytest.raises(StatusTransitionError, match=f"run status cannot change from '{old}' to '{new}'"):
        statuses.check_run(old, new)


@pytest.mark.parametrize("closed", ["resolved", "expired", "cancelled", "gone"])
def test_an_open_interrupt_closes_once(closed: str) -> None:
    statuses.check_interrupt("pending", closed)
    statuses.check_interrupt(closed, closed)
    for other in statuses.INTERRUPT_STATUSES - {closed}:
        with pytest.raises(StatusTransitionError):
            statuses.check_interrupt(closed, other)


def test_a_forbidden_change_is_an_internal_error_that_a_retry_does_not_fix() -> None:
    with pytest.raises(StatusTransitionError) as raised:
        statuses.check_interrupt("pending", "answered")
    assert raised.value.status == 500 and raised.value.code == "internal_error" and not raised.value.retryable
