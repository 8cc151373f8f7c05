"""Two ``openwop-bridge serve`` processes on one PostgreSQL database.

Any instance accepts runs, answers and signed-link calls; a run executes on
one instance at a time; streams on either instance show every run's events in
order; ``kill -9`` of the instance executing a run hands it to the other once
its lease expires; signing keys are shared and rotate across instances.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_bridge.core.clock import parse_iso_ms
from openwop_bridge.core.tokens import TokenSigner
from openwop_bridge.spec import load_fixture
from tests import pg
from tests.helpers import gate_then_wait
from tests.server import ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

KEY = "multi-key-123456"
H = {"Authorization": f"Bearer {KEY}"}
BOB_KEY = "multi-bob-123456"
LEASE_MS = 2_000
DELAY_MS = 3_000
DEADLINE_MS = 4_000  # long enough to kill the instance that wrote it first
#: How late a deadline may fire after the instance that wrote it died (a timer that slept through it: ~30 s).
DEADLINE_SLACK_MS = 5_000
WAIT_S = 30.0  # ceiling for anything to happen; every step normally takes well under a second


class Instance(ServerProcess):
    """A bridge process on the shared database, logging beside the test's files."""

    def __init__(self, url: str, workflows: Path, logs: Path, name: str, lease_ms: int = LEASE_MS) -> None:
        args = [
            "--no-demo",
            "--workflows",
            str(workflows),
            "--api-key",
            f"alice={KEY}+admin",
            "--api-key",
            f"bob={BOB_KEY}:runs:read,approvals:respond",
            "--lease-ms",
            str(lease_ms),
        ]
        super().__init__(url, args)
        self.name = name
        self.log = logs / f"{name}-{self.port}.log"

    def instance_id(self) -> str:
        return str(httpx.get(f"{self.url}/healthz", timeout=5).json()["instance"])


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir()
    for name in ("conformance-approval", "conformance-approval-timeout", "conformance-cancellable"):
        (folder / f"{name}.json").write_text(json.dumps(load_fixture(name)))
    (folder / "gate-then-wait.json").write_text(json.dumps(gate_then_wait(DELAY_MS)))
    pair = load_fixture("conformance-interrupt-quorum")  # its shape (approversList empty), two approvals
    pair["id"] = "quorum-pair"
    pair["nodes"][0]["config"]["requiredApprovals"] = 2
    (folder / "quorum-pair.json").write_text(json.dumps(pair))
    timed = load_fixture("conformance-approval-timeout")
    timed["id"], timed["nodes"][0]["config"]["timeoutMs"] = "gate-with-deadline", DEADLINE_MS
    (folder / "gate-with-deadline.json").write_text(json.dumps(timed))
    return folder


@pytest.fixture
def pair(pg_url: str, workflows: Path, tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    """Instances A and B, started one after the other on a fresh database."""
    a = Instance(pg_url, workflows, tmp_path, "a").start()
    try:
        b = Instance(pg_url, workflows, tmp_path, "b").start()
    except BaseException:
        a.stop()
        raise
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(headers=H, timeout=WAIT_S) as client:
        yield client


async def create(http: httpx.AsyncClient, on: Instance, workflow_id: str, **body: Any) -> str:
    r = await http.post(f"{on.url}/v1/runs", json={"workflowId": workflow_id, **body})
    assert r.status_code == 201, r.text
    return str(r.json()["runId"])


async def wait_for(
    http: httpx.AsyncClient, on: Instance, run_id: str, statuses: tuple[str, ...], *, event: str | None = None
) -> dict[str, Any]:
    """Poll one instance until the run reaches a status (and, optionally, has an event of a type)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    snap: dict[str, Any] = {}
    while loop.time() < deadline:
        snap = (await http.get(f"{on.url}/v1/runs/{run_id}")).json()
        if snap.get("status") in statuses and (
            event is None or event in [e["type"] for e in await events(http, on, run_id)]
        ):
            return snap
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} is {snap.get('status')} on {on.name}, wanted {statuses} / {event}")


async def until_event(http: httpx.AsyncClient, on: Instance, run_id: str, predicate: Any) -> None:
    """Poll one instance until the run has an event matching ``predicate``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while not any(predicate(d) for d in await events(http, on, run_id)):
        if loop.time() > deadline:
            raise AssertionError(f"no such event in run {run_id} on {on.name}")
        await asyncio.sleep(0.02)


async def events(http: httpx.AsyncClient, on: Instance, run_id: str) -> list[dict[str, Any]]:
    r = await http.get(f"{on.url}/v1/runs/{run_id}/events", headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text
    return list(r.json()["events"])


async def answer(http: httpx.AsyncClient, on: Instance, run_id: str, node_id: str = "gate") -> httpx.Response:
    return await http.post(
        f"{on.url}/v1/runs/{run_id}/interrupts/{node_id}", json={"resumeValue": {"action": "accept"}}
    )


def run_row(url: str, run_id: str) -> tuple[str | None, int, int | None, str]:
    """``(owner, epoch, lease_until, status)`` straight from the shared database."""
    rows = pg.execute(url, "SELECT owner, epoch, lease_until, status FROM runs WHERE run_id=%s", run_id)
    assert len(rows) == 1
    return rows[0]


class Stream:
    """An SSE subscriber: collects a run's events until its terminal event."""

    def __init__(self, http: httpx.AsyncClient, on: Instance, run_id: str, last_event_id: int | None = None) -> None:
        self.docs: list[dict[str, Any]] = []
        self.connected = asyncio.Event()
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self._task = asyncio.create_task(self._read(http, f"{on.url}/v1/runs/{run_id}/events", headers))

    async def _read(self, http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
        async with http.stream("GET", url, headers=headers, timeout=httpx.Timeout(WAIT_S, read=None)) as r:
            assert r.status_code == 200
            ids: list[int] = []
            async for line in r.aiter_lines():
                if line == ": connected":
                    self.connected.set()
                elif line.startswith("id: "):
                    ids.append(int(line[4:]))
                elif line.startswith("data: "):
                    doc = json.loads(line[6:])
                    assert doc["sequence"] == ids[-1]
                    self.docs.append(doc)
        self.connected.set()

    async def finished(self) -> list[dict[str, Any]]:
        await asyncio.wait_for(self._task, WAIT_S)
        return self.docs


def kid_of(link: str) -> str:
    token = link.rsplit("/", 1)[1]
    head = token.split(".", 1)[0]
    return str(json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))["kid"])


def keys_cli(url: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "openwop_bridge", "keys", *args, "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- the tests --------------------------------------------------------------------------------


async def test_a_run_created_on_a_and_resolved_on_b_completes_and_a_streams_it(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    run_id = await create(http, a, "conformance-approval")
    stream = Stream(http, a, run_id)  # follows the run on A from its first event
    await wait_for(http, b, run_id, ("waiting-approval",))  # B reads what A committed
    await asyncio.wait_for(stream.connected.wait(), WAIT_S)
    r = await answer(http, b, run_id)
    assert r.status_code == 200 and r.json()["status"] == "resolved"
    docs = await stream.finished()
    assert [d["sequence"] for d in docs] == list(range(len(docs)))  # in order, no gaps
    types = [d["type"] for d in docs]
    assert types[0] == "run.started" and types[-1] == "run.completed"
    assert types.count("interrupt.requested") == 1 and types.count("interrupt.resolved") == 1
    assert docs == await events(http, b, run_id)  # one truth, whichever instance is asked
    snap = (await http.get(f"{a.url}/v1/runs/{run_id}")).json()
    assert snap["status"] == "completed" and snap["nodeStates"]["gate"]["outputs"]["decidedBy"] == "alice"


async def test_last_event_id_resumes_on_the_other_instance_live(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> None:
    a, b = pair
    run_id = await create(http, a, "gate-then-wait")
    await wait_for(http, a, run_id, ("waiting-approval",))
    seen = await events(http, a, run_id)
    last = seen[-2]["sequence"]  # pretend the client lost the connection one event early
    resumed = Stream(http, b, run_id, last_event_id=last)
    await asyncio.wait_for(resumed.connected.wait(), WAIT_S)
    assert (await answer(http, a, run_id)).status_code == 200
    docs = await resumed.finished()
    assert [d["sequence"] for d in docs] == list(range(last + 1, last + 1 + len(docs)))
    assert docs[0] == seen[-1] and docs[-1]["type"] == "run.completed"
    full = await events(http, b, run_id)
    assert docs == full[last + 1 :]
    assert run_row(pg_url, run_id)[3] == "completed"


class TakeOver:
    """A ``kill -9`` of the instance executing a run mid-delay, watched from the survivor."""

    def __init__(self) -> None:
        self.docs: list[dict[str, Any]] = []
        self.before_kill = 0
        self.epoch = 0
        self.dead_lease_until = 0
        self.snapshot: dict[str, Any] = {}


async def kill_the_executing_instance(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> TakeOver:
    a, b = pair
    seen = TakeOver()
    ids = {a.instance_id(): a, b.instance_id(): b}
    run_id = await create(http, a, "gate-then-wait")
    await wait_for(http, a, run_id, ("waiting-approval",))
    assert (await answer(http, a, run_id)).status_code == 200  # acknowledged: must survive the kill
    await until_event(http, b, run_id, lambda d: d["type"] == "node.started" and d["payload"]["nodeId"] == "wait")
    owner, seen.epoch, _, status = run_row(pg_url, run_id)
    assert owner in ids and status == "running", (owner, status)  # mid-delay on its owner
    victim = ids[owner]
    survivor = b if victim is a else a
    stream = Stream(http, survivor, run_id, last_event_id=-1)
    await asyncio.wait_for(stream.connected.wait(), WAIT_S)
    seen.before_kill = len(await events(http, survivor, run_id))
    victim.kill9()
    _, _, lease_until, _ = run_row(pg_url, run_id)  # nobody renews it any more
    assert lease_until is not None
    seen.dead_lease_until = lease_until
    seen.snapshot = await wait_for(http, survivor, run_id, ("completed", "failed", "cancelled"))
    seen.docs = await stream.finished()
    owner_after, epoch_after, _, _ = run_row(pg_url, run_id)
    assert owner_after is None and epoch_after > seen.epoch  # claimed again, under a new epoch
    return seen


async def test_kill_9_of_the_executing_instance_lets_the_other_finish_it(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> None:
    seen = await kill_the_executing_instance(pair, http, pg_url)
    assert seen.snapshot["status"] == "completed", seen.snapshot
    assert seen.snapshot["nodeStates"]["gate"]["outputs"]["decidedBy"] == "alice"
    docs = seen.docs
    assert [d["sequence"] for d in docs] == list(range(len(docs)))  # the survivor's stream: in order, no gaps
    assert len([d for d in docs if d["type"] == "interrupt.requested"]) == 1  # nobody was asked twice
    assert [d["type"] for d in docs].count("interrupt.resolved") == 1
    # The survivor took over only once the dead owner's lease had run out.
    taken_over = docs[seen.before_kill :]
    assert taken_over and all(parse_iso_ms(d["timestamp"]) >= seen.dead_lease_until for d in taken_over)


async def test_the_node_running_at_the_kill_runs_again_on_the_survivor(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> None:
    seen = await kill_the_executing_instance(pair, http, pg_url)
    assert seen.snapshot["nodeStates"]["wait"]["status"] == "completed", seen.snapshot["nodeStates"]
    completed = [d for d in seen.docs[seen.before_kill :] if d["type"] == "node.completed"]
    assert [d["payload"]["nodeId"] for d in completed] == ["wait"]


async def test_64_concurrent_answers_over_both_instances_give_exactly_one_200(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    run_id = await create(http, b, "conformance-approval")
    await wait_for(http, a, run_id, ("waiting-approval",))
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(headers=H, timeout=WAIT_S, limits=limits) as many:
        responses = await asyncio.gather(*(answer(many, (a, b)[i % 2], run_id) for i in range(64)))
    codes = [r.status_code for r in responses]
    assert codes.count(200) == 1, codes
    assert codes.count(409) == 63, codes
    assert {r.json()["error"] for r in responses if r.status_code == 409} == {"interrupt_already_resolved"}
    await wait_for(http, a, run_id, ("completed",))
    types = [d["type"] for d in await events(http, b, run_id)]
    assert types.count("interrupt.resolved") == 1 and types[-1] == "run.completed"


async def test_a_cancel_on_one_instance_stops_a_run_executing_on_the_other(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> None:
    a, b = pair
    ids = {a.instance_id(): a, b.instance_id(): b}
    run_id = await create(http, a, "conformance-cancellable", inputs={"delayMs": 120_000})
    await wait_for(http, a, run_id, ("running",), event="node.started")
    owner, _, _, _ = run_row(pg_url, run_id)
    assert owner in ids
    other = b if ids[owner] is a else a
    r = await http.post(f"{other.url}/v1/runs/{run_id}/cancel", json={"reason": "stop"})
    assert r.status_code == 200, r.text
    # The owner hears of it through the database and cancels long before the two-minute delay ends.
    done = await wait_for(http, other, run_id, ("cancelled", "completed", "failed"))
    assert done["status"] == "cancelled"
    types = [d["type"] for d in await events(http, other, run_id)]
    assert types[-1] == "run.cancelled" and "node.completed" not in types


async def test_a_deadline_fires_once_with_two_instances_watching(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    run_id = await create(http, a, "conformance-approval-timeout")
    done = await wait_for(http, b, run_id, ("failed", "completed"))
    assert done["status"] == "failed" and done["error"]["code"] == "approval_rejected"
    resolved = [d for d in await events(http, a, run_id) if d["type"] == "interrupt.resolved"]
    assert len(resolved) == 1 and resolved[0]["payload"]["action"] == "timeout"


async def test_links_verify_on_every_instance_and_keys_rotate_across_them(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> None:
    a, b = pair
    first = await create(http, a, "conformance-approval")
    spare = await create(http, a, "conformance-approval")
    old_link = (await wait_for(http, a, first, ("waiting-approval",)))["interrupt"]["callbackUrl"]
    spare_link = (await wait_for(http, a, spare, ("waiting-approval",)))["interrupt"]["callbackUrl"]
    old_kid = kid_of(old_link)
    token = old_link.rsplit("/", 1)[1]
    anonymous = httpx.AsyncClient(timeout=WAIT_S)  # a link needs no API key
    inspected = await anonymous.get(f"{b.url}/v1/interrupts/{token}")
    assert inspected.status_code == 200 and inspected.json()["runId"] == first  # minted on A, read on B

    out = keys_cli(pg_url, "rotate")
    new_kid = out.split("new active signing key: ", 1)[1].split()[0]
    assert new_kid != old_kid and f"{new_kid}\tactive" in out and f"{old_kid}\tverify-only" in out
    # No restart: A reloads the keys with its lease renewals and signs with the new one.
    second = await create(http, a, "conformance-approval")
    deadline = time.monotonic() + WAIT_S
    while True:
        new_link = (await wait_for(http, a, second, ("waiting-approval",)))["interrupt"]["callbackUrl"]
        if kid_of(new_link) == new_kid:
            break
        assert time.monotonic() < deadline, "A never started signing with the rotated key"
        await asyncio.sleep(0.1)
    accept = {"resumeValue": {"action": "accept"}}
    r = await anonymous.post(f"{b.url}/v1/interrupts/{new_link.rsplit('/', 1)[1]}", json=accept)
    assert r.status_code == 200, r.text  # B learns the new key from the database
    r = await anonymous.post(f"{a.url}/v1/interrupts/{token}", json=accept)
    assert r.status_code == 200, r.text  # links signed before the rotation keep working
    for run_id in (first, second):
        await wait_for(http, b, run_id, ("completed",))

    keys_cli(pg_url, "retire", "--kid", old_kid)
    for instance in (a, b):  # within a renewal interval, still without restarts
        deadline = time.monotonic() + WAIT_S
        while True:
            gone = await anonymous.get(f"{instance.url}/v1/interrupts/{spare_link.rsplit('/', 1)[1]}")
            if gone.status_code != 200:
                break
            assert time.monotonic() < deadline, "the retired key still verifies"
            await asyncio.sleep(0.1)
        assert gone.status_code == 404, gone.text  # a retired key verifies nowhere
    await anonymous.aclose()
    assert (await answer(http, b, spare)).status_code == 200  # the interrupt itself is still answerable


async def test_one_person_cannot_fill_a_two_person_quorum_across_two_instances(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> None:
    a, b = pair
    run_id = await create(http, a, "quorum-pair")
    await wait_for(http, b, run_id, ("waiting-approval",))
    mine = await answer(http, a, run_id)  # alice, with her key, on A
    assert mine.status_code == 200 and mine.json()["status"] == "pending", mine.text
    link = (await http.get(f"{b.url}/v1/runs/{run_id}")).json()["interrupt"]["callbackUrl"]  # her view on B
    token = link.rsplit("/", 1)[1]
    assert _claims(token)["sub"] == "alice"
    accept = {"resumeValue": {"action": "accept"}}
    async with httpx.AsyncClient(timeout=WAIT_S) as anonymous:
        again = await anonymous.post(f"{a.url}/v1/interrupts/{token}", json=accept)
        assert again.status_code == 200 and again.json().get("duplicate") is True, again.text
        # A link that names no one, signed with the shared key as links were before the rule.
        kid, secret = pg.execute(pg_url, "SELECT kid, secret FROM signing_keys WHERE active")[0]
        claims = _claims(token)
        unnamed = TokenSigner({kid: secret}, kid).mint(
            claims["runId"], "gate", claims["interruptId"], parse_iso_ms(claims["expiresAt"]), "resolve"
        )
        for on in (a, b):
            refused = await anonymous.post(f"{on.url}/v1/interrupts/{unnamed}", json=accept)
            assert refused.status_code == 403 and refused.json()["error"] == "forbidden", refused.text
    snap = await wait_for(http, b, run_id, ("waiting-approval",))
    assert [v["voter"] for v in snap["interrupt"]["votes"]["votes"]] == ["alice"]
    bob = await http.post(
        f"{b.url}/v1/runs/{run_id}/interrupts/gate", json=accept, headers={"Authorization": f"Bearer {BOB_KEY}"}
    )
    assert bob.status_code == 200 and bob.json()["status"] == "resolved", bob.text
    done = await wait_for(http, a, run_id, ("completed",))
    assert done["nodeStates"]["gate"]["outputs"]["quorum"] == "quorum:2-of-2"


def _claims(token: str) -> dict[str, Any]:
    head = token.split(".", 1)[0]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    return claims


def test_a_database_migrated_by_a_newer_bridge_is_refused_with_a_clear_message(
    pg_url: str, workflows: Path, tmp_path: Path
) -> None:
    instance = Instance(pg_url, workflows, tmp_path, "first").start()
    instance.stop()
    pg.execute(pg_url, "UPDATE meta SET value='99' WHERE key='schema_version'")
    refused = Instance(pg_url, workflows, tmp_path, "second")
    with pytest.raises(RuntimeError) as err:
        refused.start()
    assert "the database schema is version 99" in str(err.value)
    assert "upgrade openwop-bridge" in str(err.value)


def test_an_unreachable_database_is_a_clear_error(workflows: Path, tmp_path: Path) -> None:
    refused = Instance("postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2", workflows, tmp_path, "x")
    with pytest.raises(RuntimeError) as err:
        refused.start()
    assert "cannot connect to PostgreSQL at postgresql://nobody:***@127.0.0.1:1/none" in str(err.value)


async def test_a_deadline_written_by_a_killed_instance_fires_on_time_on_the_other(
    pair: tuple[Instance, Instance], http: httpx.AsyncClient, pg_url: str
) -> None:
    a, b = pair
    run_id = await create(http, a, "gate-with-deadline")  # leased to A: A's executor writes the deadline
    await wait_for(http, b, run_id, ("waiting-approval",))
    [(deadline,)] = pg.execute(pg_url, "SELECT deadline FROM interrupts WHERE run_id=%s", run_id)
    owner, _, _, _ = run_row(pg_url, run_id)
    assert owner in (None, a.instance_id())
    a.kill9()
    assert int(time.time() * 1000) < deadline, "the instance was killed after the deadline: nothing to test"
    loop = asyncio.get_running_loop()
    give_up = loop.time() + (DEADLINE_MS + 40_000) / 1000
    resolved: list[dict[str, Any]] = []
    while not resolved and loop.time() < give_up:
        resolved = [d for d in await events(http, b, run_id) if d["type"] == "interrupt.resolved"]
        await asyncio.sleep(0.05)
    assert resolved, "the deadline never fired"
    late_ms = parse_iso_ms(resolved[0]["timestamp"]) - deadline
    assert 0 <= late_ms < DEADLINE_SLACK_MS, f"fired {late_ms} ms after its deadline"
    assert resolved[0]["payload"]["action"] == "timeout"
    await asyncio.sleep(1.0)  # a second firing would come within the timer's next turn
    again = [d for d in await events(http, b, run_id) if d["type"] == "interrupt.resolved"]
    assert len(again) == 1


async def test_a_graceful_stop_hands_its_runs_to_the_other_instance_at_once(
    pg_url: str, workflows: Path, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    """SIGTERM: the stopping instance releases its leases and says so; the other resumes its runs at once,
    not once the lease (here 30 s) has run out."""
    lease_ms = 30_000
    a = Instance(pg_url, workflows, tmp_path, "a", lease_ms=lease_ms).start()
    b = Instance(pg_url, workflows, tmp_path, "b", lease_ms=lease_ms).start()
    try:
        a_id = a.instance_id()
        run_id = await create(http, a, "gate-then-wait")
        await wait_for(http, a, run_id, ("waiting-approval",))
        assert (await answer(http, a, run_id)).status_code == 200
        await until_event(http, a, run_id, lambda d: d["type"] == "node.started" and d["payload"]["nodeId"] == "wait")
        owner, epoch, _, status = run_row(pg_url, run_id)
        assert (owner, status) == (a_id, "running")  # mid-delay on A, leased for 30 s
        a.stop()  # SIGTERM, and wait for the process to exit
        stopped_ms = int(time.time() * 1000)
        assert a.proc is not None and a.proc.returncode is not None
        owner_after, _, _, _ = run_row(pg_url, run_id)
        assert owner_after != a_id  # released on the way out
        done = await wait_for(http, b, run_id, ("completed", "failed", "cancelled"))
        assert done["status"] == "completed"
        ended = [d for d in await events(http, b, run_id) if d["type"] == "run.completed"]
        taken_ms = parse_iso_ms(ended[0]["timestamp"]) - stopped_ms
        # The delay (3 s) ran again on B right away: nobody waited for A's 30 s lease to run out.
        assert taken_ms < DELAY_MS + 3_000, f"the run ended {taken_ms} ms after the stop"
        _, epoch_after, _, _ = run_row(pg_url, run_id)
        assert epoch_after > epoch
    finally:
        a.stop()
        b.stop()
