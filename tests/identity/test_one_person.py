"""One person across every channel: a provider's token, a Slack click and an e-mailed link of the same person
are one voter, and runs and decisions record the subject that made them (v2 ``owner.subject``, ``resolvedBy``).

Against a real OpenID provider, a served bridge with a notify file (real SMTP and a Slack stand-in on
loopback), on SQLite and, with ``BRIDGE_TEST_STORE=postgres``, PostgreSQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_bridge import spec as v1_spec
from openwop_bridge.host.cli import main
from openwop_bridge.host.v2 import ids
from openwop_bridge.notify.worker import Settled
from openwop_bridge.spec import v2 as spec
from tests.helpers import events, settle
from tests.identity.provider import OpenIdProvider, client, issuer_config
from tests.notify.host import SIGNING_SECRET, NotifyHost, gate, notify_host
from tests.notify.receivers import block_action, mail_parts, slack_signed
from tests.server import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.slow, pytest.mark.engine_store]

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/\S+)")
V2 = {"OpenWOP-Version": "2.0"}
ACCEPT = {"resumeValue": {"action": "accept"}}


@pytest.fixture(scope="module")
def provider() -> Iterator[OpenIdProvider]:
    """A provider whose token for alice carries a principal claim that is not her notify key."""
    started = OpenIdProvider(
        [
            client("alice-app", preferred_username="a.smith", groups=["approvers"]),
            client("bob-app", preferred_username="bob", groups=["approvers"]),
            client("mallory-app", preferred_username="alice"),
        ]
    )
    yield started
    started.stop()


def _people(provider: OpenIdProvider) -> dict[str, Any]:
    alice_subject = {"issuer": provider.issuer, "subjectId": "alice-app"}
    return {
        "alice": {"email": "alice@example.com", "slack": "U0ALICE", "roles": ["finance"], "subject": alice_subject},
        "bob": {"email": "bob@example.com", "slack": "U0BOB", "roles": ["finance"]},
    }


def _bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


def _subject(provider: OpenIdProvider, sub: str) -> dict[str, str]:
    """The v2 Subject of a token of ``provider`` whose ``sub`` is ``sub`` (the issuer's lane is oauth2)."""
    return {"issuer": provider.issuer, "subjectId": sub, "tenant": "default", "lane": "oauth2", "kind": "user"}


async def _click(host: NotifyHost, user: str, interrupt_id: str) -> httpx.Response:
    body, headers = slack_signed(SIGNING_SECRET, block_action(user, "accept", interrupt_id))
    return await host.client.post("/notify/slack/interactions", content=body, headers=headers)


async def test_a_token_a_slack_click_and_a_link_of_one_person_are_one_vote(
    provider: OpenIdProvider, tmp_path: Path
) -> None:
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    routes = [{"match": {"workflowId": "expense"}, "notify": ["role:finance"]}]
    identity = {"issuers": [issuer_config(provider)]}
    async with notify_host(
        tmp_path, routes=routes, workflows=[wf], people=_people(provider), with_teams=False, identity=identity
    ) as host:
        alice = _bearer(provider.token("alice-app"))
        bob = _bearer(provider.token("bob-app"))
        # Alice starts the run with her token, over v2.
        created = await host.client.post("/runs", json={"workflowId": "expense"}, headers={**alice, **V2})
        assert created.status_code == 201, created.text
        bound = created.json()["runId"]
        run_id, wire = ids.engine_id(bound.split("/", 1)[1]), ids.project(bound)
        await settle(host.engine, run_id)
        (record,) = await host.engine.run_interrupts(run_id, open_only=True)
        await host.until(lambda: len(host.smtp.mails) == 2, "a mail to alice and one to bob")
        links = {rcpts[0].split("@")[0]: LINK.findall(mail_parts(m)[0])[0] for rcpts, m in host.smtp.mails}

        # Her token's principal claim is "a.smith"; its sub is hers in the notify file: she is alice.
        first = await host.client.post(f"/v1/runs/{run_id}/interrupts/review", json=ACCEPT, headers=alice)
        assert first.status_code == 200, first.text
        assert first.json()["status"] == "pending"
        # Her Slack click and her e-mailed link are the same person voting again: nothing changes.
        clicked = await _click(host, "U0ALICE", record.interrupt_id)
        assert clicked.status_code == 200, clicked.text
        again = await host.client.post(links["alice"], json=ACCEPT)
        assert again.status_code == 200, again.text
        assert again.json()["duplicate"] is True and again.json()["votes"]["accept"] == 1
        pending = await host.engine.interrupt_record(record.interrupt_id)
        assert pending is not None and pending.open
        alice_ref = {"issuer": provider.issuer, "subjectId": "alice-app", "lane": "oauth2"}
        assert pending.state["votes"] == [
            {
                "voter": "alice",
                "action": "accept",
                "at": pending.state["votes"][0]["at"],
                "subject": alice_ref,
            }
        ]
        # Bob's token closes it.
        last = await host.client.post(f"/v1/runs/{run_id}/interrupts/review", json=ACCEPT, headers=bob)
        assert last.status_code == 200, last.text
        assert last.json()["status"] == "resolved"
        await settle(host.engine, run_id, statuses=("completed",))

        # The audit names one person, alice, with the subject of each channel she came through.
        audit = [a for a in await host.engine.audit(run_id) if a["action"].startswith("approval.")]
        assert [(a["action"], a["principal"], a["details"].get("subject")) for a in audit] == [
            ("approval.vote.accept", "alice", alice_ref),
            (
                "approval.duplicate-vote",
                "alice",
                {"issuer": "urn:openwop-bridge:slack", "subjectId": "U0ALICE", "lane": "api-key"},
            ),
            (
                "approval.duplicate-vote",
                "alice",
                {"issuer": "urn:openwop-bridge:link", "subjectId": "alice", "lane": "api-key"},
            ),
            ("approval.vote.accept", "bob", {"issuer": provider.issuer, "subjectId": "bob-app", "lane": "oauth2"}),
        ]
        # v1 keeps its shape: the owner is the principal; the decision records its subject beside decidedBy.
        v1 = (await host.client.get(f"/v1/runs/{run_id}", headers=alice)).json()
        assert v1["owner"] == {"tenant": "default", "principal": "alice"}
        assert [e.message for e in v1_spec.validator("run-snapshot.schema.json").iter_errors(v1)] == []
        for doc in await host.engine.store.read_events(run_id):
            assert v1_spec.validate_event(doc) == [], (doc["type"], doc)
        (started,) = [e["payload"] for e in await events(host.engine, run_id, "run.started")]
        assert started["owner"] == {"tenant": "default", "principal": "alice"} and started["ownerSubject"] == alice_ref
        (received,) = [e["payload"] for e in await events(host.engine, run_id, "approval.received")]
        assert received["decidedBy"] == "bob"
        assert received["decidedBySubject"] == {"issuer": provider.issuer, "subjectId": "bob-app", "lane": "oauth2"}
        sent = await events(host.engine, run_id, "notification.sent")
        # Two people told, each on their e-mail and their Slack (a token of alice is no third recipient).
        assert sorted(e["payload"]["recipient"] for e in sent) == ["alice", "alice", "bob", "bob"]

        # v2: the owner and each decision are the token subjects.
        owner = {"tenant": "default", "subject": _subject(provider, "alice-app")}
        snap = (await host.client.get(f"/runs/{wire}", headers={**alice, **V2})).json()
        assert snap["owner"] == owner
        assert spec.problems("subject.schema.json", snap["owner"]["subject"]) == []
        listed = (await host.client.get("/runs", headers={**alice, **V2})).json()["runs"]
        assert [r["owner"] for r in listed if r["runId"] == bound] == [owner]
        page = await host.client.get(f"/runs/{wire}/events/poll", params={"timeout": 1}, headers={**alice, **V2})
        docs = page.json()["events"]
        for doc in docs:
            assert spec.validate_event(doc) == [], (doc["type"], doc)
        by_type = {t: [d["payload"] for d in docs if d["type"] == t] for t in {d["type"] for d in docs}}
        assert [p["owner"] for p in by_type["run.started"]] == [owner]
        assert [p["resolvedBy"] for p in by_type["approval.granted"]] == [
            _subject(provider, "alice-app"),
            _subject(provider, "bob-app"),
        ]
        assert [p["resolvedBy"] for p in by_type["approval.received"]] == [_subject(provider, "bob-app")]
        assert [p["resolvedBy"] for p in by_type["interrupt.resolved"]] == [_subject(provider, "bob-app")]


async def test_links_and_keys_keep_their_subjects(provider: OpenIdProvider, tmp_path: Path) -> None:
    """A run started with an API key is owned by the key realm's subject; a vote by signed link records the
    link realm's subject, and v2 shows both."""
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    routes = [{"match": {"workflowId": "expense"}, "notify": ["role:finance"]}]
    identity = {"issuers": [issuer_config(provider)]}
    async with notify_host(
        tmp_path, routes=routes, workflows=[wf], people=_people(provider), with_teams=False, identity=identity
    ) as host:
        key = {"Authorization": "Bearer key-bob-000001"}
        created = await host.client.post("/runs", json={"workflowId": "expense"}, headers={**key, **V2})
        assert created.status_code == 201, created.text
        bound = created.json()["runId"]
        run_id, wire = ids.engine_id(bound.split("/", 1)[1]), ids.project(bound)
        await settle(host.engine, run_id)
        await host.until(lambda: len(host.smtp.mails) == 2, "a mail to alice and one to bob")
        links = {rcpts[0].split("@")[0]: LINK.findall(mail_parts(m)[0])[0] for rcpts, m in host.smtp.mails}
        assert (await host.client.post(links["alice"], json=ACCEPT)).json()["status"] == "pending"
        closing = await host.client.post(f"/v1/runs/{run_id}/interrupts/review", json=ACCEPT, headers=key)
        assert closing.json()["status"] == "resolved", closing.text
        await settle(host.engine, run_id, statuses=("completed",))
        snap = (await host.client.get(f"/runs/{wire}", headers={**key, **V2})).json()
        assert snap["owner"]["subject"] == {
            "issuer": "urn:openwop-bridge:api-key",
            "subjectId": "bob",
            "tenant": "default",
            "lane": "api-key",
            "kind": "user",
        }
        page = await host.client.get(f"/runs/{wire}/events/poll", params={"timeout": 1}, headers={**key, **V2})
        granted = [d["payload"]["resolvedBy"] for d in page.json()["events"] if d["type"] == "approval.granted"]
        assert [(g["issuer"], g["subjectId"], g["lane"]) for g in granted] == [
            ("urn:openwop-bridge:link", "alice", "api-key"),
            ("urn:openwop-bridge:api-key", "bob", "api-key"),
        ]
        discovery = (await host.client.get("/.well-known/openwop", headers=V2)).json()
        key_lane = next(lane for lane in discovery["auth"]["lanes"] if lane["lane"] == "api-key")
        # Every realm a decision can record is advertised: keys, links and (Slack is configured here) Slack.
        assert key_lane["issuers"] == [
            "urn:openwop-bridge:api-key",
            "urn:openwop-bridge:link",
            "urn:openwop-bridge:slack",
        ]
        assert {g["issuer"] for g in granted} <= set(key_lane["issuers"])


async def test_a_vote_by_token_spares_its_person_the_reminder(provider: OpenIdProvider, tmp_path: Path) -> None:
    """Alice votes with her token (principal claim "a.smith"): she is the notify file's alice, who has voted, so the
    reminder goes to bob alone."""
    people = {name: {k: v for k, v in p.items() if k != "slack"} for name, p in _people(provider).items()}
    wf = gate("expense", requiredApprovals=2, approversList=["alice", "bob"])
    routes = [{"match": {"workflowId": "expense"}, "notify": ["role:finance"], "remindAfterMs": 1000}]
    identity = {"issuers": [issuer_config(provider)]}
    async with notify_host(
        tmp_path, routes=routes, workflows=[wf], people=people, with_teams=False, identity=identity
    ) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        run_id, _ = await host.start_gate()
        await host.until(lambda: len(host.smtp.mails) == 2, "a mail to alice and one to bob")
        where = f"/v1/runs/{run_id}/interrupts/review"
        voted = await host.client.post(where, json=ACCEPT, headers=_bearer(provider.token("alice-app")))
        assert voted.status_code == 200 and voted.json()["status"] == "pending", voted.text
        await host.until(
            lambda: sum(1 for s in settled if s.notice.payload.get("purpose") == "reminder") == 2, "both reminders due"
        )
        reminded = [rcpts for rcpts, m in host.smtp.mails if str(m["Subject"]).startswith("Reminder")]
        assert reminded == [["bob@example.com"]], "alice voted, by token: no reminder for her"


def test_serve_resolves_a_person_by_their_subject_and_refuses_an_unknown_issuer(
    provider: OpenIdProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    identity = tmp_path / "identity.json"
    identity.write_text(json.dumps({"issuers": [issuer_config(provider)]}))
    notify = tmp_path / "notify.json"
    people = {"alice": {"subject": {"issuer": provider.issuer, "subjectId": "alice-app"}}}
    notify.write_text(json.dumps({"publicBaseUrl": "http://127.0.0.1:9", "people": people}))
    args = ["--identity-config", str(identity), "--notify-config", str(notify)]
    with ServerProcess(tmp_path / "serve.db", args) as server:
        created = httpx.post(
            f"{server.url}/v1/runs",
            json={"workflowId": "demo-expense-approval"},
            headers=_bearer(provider.token("alice-app")),
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        snap = httpx.get(f"{server.url}/runs/{run_id}", headers=_bearer(provider.token("alice-app"), **V2))
        assert snap.status_code == 200, snap.text
        assert snap.json()["owner"]["subject"] == _subject(provider, "alice-app")
        v1 = httpx.get(f"{server.url}/v1/runs/{run_id}", headers=_bearer(provider.token("alice-app")))
        assert v1.json()["owner"]["principal"] == "alice"
        # alice names her identity: a token claiming her name with another sub is nobody.
        claimed = httpx.get(f"{server.url}/v1/runs", headers=_bearer(provider.token("mallory-app")))
        assert claimed.status_code == 401 and claimed.json()["error"] == "identity_unresolvable", claimed.text

    unknown = "https://idp.example.com"
    people = {"alice": {"subject": {"issuer": unknown, "subjectId": "248289761001"}}}
    notify.write_text(json.dumps({"publicBaseUrl": "http://127.0.0.1:9", "people": people}))
    assert main(["serve", "--db", str(tmp_path / "refused.db"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"openwop-bridge: notify file {str(notify)!r}: people.alice.subject.issuer: {unknown!r}: the identity file "
        "names no such issuer (--identity-config)"
    ]
    # Without an identity file, no token can be anyone's: a subject names an issuer nobody trusts.
    assert main(["serve", "--db", str(tmp_path / "refused.db"), "--notify-config", str(notify)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"openwop-bridge: notify file {str(notify)!r}: people.alice.subject.issuer: {unknown!r}: no identity file "
        "is given (--identity-config)"
    ]
    assert not (tmp_path / "refused.db").exists(), "refused before anything opens"
