"""The official conformance fixtures load unmodified and run to their expected outcomes."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from openwop_bridge import Engine, spec
from openwop_bridge.core.workflow import load_workflow
from openwop_bridge.spec import v2 as spec_v2
from tests.helpers import ADMIN, event_types, events, settle

SHARED = Path(__file__).resolve().parents[3] / "shared" / "openwop"


def test_vendored_spec_files_match_their_manifest() -> None:
    root = Path(spec.__file__).parent
    lines = (root / "MANIFEST.sha256").read_text().splitlines()
    assert len(lines) == len(spec.schema_names()) + len(spec.fixture_names()) + len(spec_v2.schema_names())
    for line in lines:
        digest, name = line.split()
        assert hashlib.sha256((root / name).read_bytes()).hexdigest() == digest, name
        upstream = SHARED / name
        if upstream.exists():  # beside the upstream copy: it must be identical too
            assert upstream.read_bytes() == (root / name).read_bytes(), name


def test_vendored_v2_schemas_name_their_source_commit() -> None:
    root = Path(spec_v2.__file__).parent
    sources = (root / "SOURCES.md").read_text()
    for name in spec_v2.schema_names():
        row = next(line for line in sources.splitlines() if line.startswith(f"| `{name}` |"))
        repo, path, commit = (cell.strip(" `") for cell in row.split("|")[2:5])
        assert repo.startswith("openwop/") and path == f"schemas/v2/{name}" and len(commit) == 40, row
        assert spec_v2.schema(name)["$id"] == spec_v2.BASE_URI + name


@pytest.mark.parametrize("name", spec.fixture_names())
def test_every_fixture_loads_unmodified(name: str, engine: Engine) -> None:
    doc = spec.load_fixture(name)
    wf = load_workflow(doc)
    assert wf.id == doc["id"]
    assert engine.workflow(wf.id).raw == load_workflow(doc).raw


async def test_noop_and_delay(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-noop")
    assert (await settle(engine, run.run_id)).status == "completed"
    run = await engine.create_run(ADMIN, "conformance-delay", inputs={"delayMs": 150})
    await asyncio.sleep(0.06)
    assert (await engine.store.load_run(run.run_id)).status == "running"
    assert "node.started" in await event_types(engine, run.run_id)  # visible while the node waits
    assert (await settle(engine, run.run_id)).status == "completed"


async def test_cancellable_ends_cancelled_quickly(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-cancellable")
    await asyncio.sleep(0.1)
    started = asyncio.get_running_loop().time()
    await engine.cancel_run(run.run_id, ADMIN)
    done = await settle(engine, run.run_id, statuses=("cancelled",), timeout=5)
    assert done.status == "cancelled" and asyncio.get_running_loop().time() - started < 5
    cancelled = (await events(engine, run.run_id, "run.cancelled"))[0]["payload"]
    assert cancelled["cancelledBy"] == "alice" and "parentRunId" not in cancelled


async def test_reject_routed(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-approval-reject-routed")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"action": "reject"}, run_id=run.run_id, node_id="gate")
    done = await settle(engine, run.run_id)
    nodes = done.state["nodes"]
    assert done.status == "completed"
    assert nodes["gate"]["error"]["code"] == "approval_rejected"
    assert nodes["on-reject"]["status"] == "completed" and nodes["on-accept"]["status"] == "skipped"


async def test_reject_loopback_asks_again_with_a_new_key(engine: Engine) -> None:
    run = await engine.create_run(ADMIN, "conformance-approval-reject-loopback")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"action": "reject"}, run_id=run.run_id, node_id="gate")
    again = await settle(engine, run.run_id)
    assert again.status == "waiting-approval"
    requested = await events(engine, run.run_id, "interrupt.requested")
    assert len(requested) == 2 and requested[0]["payload"]["key"] != requested[1]["payload"]["key"]
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
    done = await settle(engine, run.run_id)
    assert done.status == "completed" and done.state["nodes"]["gate"]["visit"] == 1
    assert done.state["nodes"]["revise"]["status"] in ("completed", "skipped")


@pytest.mark.parametrize("workflow", ["conformance-approval-timeout", "conformance-approval-timeout-approve"])
async def test_timeout_never_approves(engine: Engine, workflow: str) -> None:
    run = await engine.create_run(ADMIN, workflow)
    done = await settle(engine, run.run_id, statuses=("completed", "failed"), timeout=10)
    assert done.status == "failed" and done.state["error"]["code"] == "approval_rejected"
    resolved = (await events(engine, run.run_id, "interrupt.resolved"))[0]["payload"]
    assert (resolved["action"], resolved["decision"], resolved["reason"]) == ("timeout", "rejected", "timeout")
    received = (await events(engine, run.run_id, "approval.received"))[0]["payload"]
    assert received["action"] == "timeout" and received["decidedBy"]


async def test_approval_accept_and_reject(engine: Engine) -> None:
    for action, status in (("accept", "completed"), ("reject", "failed")):
        run = await engine.create_run(ADMIN, "conformance-approval")
        await settle(engine, run.run_id)
        await engine.resolve(ADMIN, {"action": action}, run_id=run.run_id, node_id="gate")
        done = await settle(engine, run.run_id)
        assert done.status == status
        if status == "failed":
            assert done.state["error"]["code"] == "approval_rejected"
            failed = (await events(engine, run.run_id, "run.failed"))[0]["payload"]
            assert failed["failedNodeId"] == "gate"
