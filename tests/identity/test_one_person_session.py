"""One person through the inbox session and through Slack is one voter: on a quorum of two, alice signing in
to the inbox and then clicking in Slack casts one vote; bob's is the second.

A real ``serve`` with an identity file (the inbox's sign-in through a real OpenID provider) and a notify
file (Slack interactions signed with its secret), on loopback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.identity.provider import OpenIdProvider
from tests.identity.signin_flow import ACCOUNTS, INBOX_HEADER, identity_file, origin, secret_env, sign_in
from tests.notify.receivers import block_action, slack_signed
from tests.server import ServerProcess, free_port, wait_for_status

pytestmark = [pytest.mark.node, pytest.mark.slow]

KEY = "bob-key-session-0001"
BOB = {"Authorization": f"Bearer {KEY}"}
SIGNING_SECRET = "slack-signing-secret-one-person"
ACCEPT = {"resumeValue": {"action": "accept"}}


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def idp(port: int) -> Iterator[OpenIdProvider]:
    started = OpenIdProvider(redirect_uris=[f"http://127.0.0.1:{port}/ui/auth/callback"], accounts=ACCOUNTS)
    yield started
    started.stop()


def _files(folder: Path, idp: OpenIdProvider, port: int) -> list[str]:
    workflows = folder / "workflows"
    workflows.mkdir()
    release = json.loads((Path(__file__).parents[2] / "bridge/demo/demo-governed-release.json").read_text())
    release["id"] = "pair-release"
    gate = next(n for n in release["nodes"] if n["typeId"] == "core.approvalGate")
    gate["config"].update({"requiredApprovals": 2, "approversList": ["alice", "bob"]})
    (workflows / "pair-release.json").write_text(json.dumps(release))
    notify = folder / "notify.json"
    closed = free_port()  # nothing listens: messages to Slack wait in the outbox, clicks still decide
    notify.write_text(
        json.dumps(
            {
                "people": {"alice": {"slack": "U0ALICE"}, "bob": {"slack": "U0BOB"}},
                "channels": {
                    "slack": {
                        "token": "xoxb-test-token",
                        "signingSecret": SIGNING_SECRET,
                        "apiBase": f"http://127.0.0.1:{closed}/api/",
                    }
                },
                "routes": [],
                "publicBaseUrl": f"http://127.0.0.1:{port}",
            }
        )
    )
    return [
        "--identity-config",
        str(identity_file(folder, idp)),
        "--notify-config",
        str(notify),
        "--workflows",
        str(workflows),
        "--api-key",
        f"bob={KEY}",
    ]


def test_the_inbox_session_and_a_slack_click_of_one_person_are_one_vote(
    idp: OpenIdProvider, port: int, tmp_path: Path
) -> None:
    with ServerProcess(tmp_path / "serve.db", _files(tmp_path, idp, port), port=port, env=secret_env()) as server:
        created = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "pair-release"}, headers=BOB)
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        wait_for_status(server.url, BOB, run_id, ("waiting-approval",))
        snapshot = httpx.get(f"{server.url}/v1/runs/{run_id}", headers=BOB).json()
        node, interrupt_id = snapshot["interrupt"]["nodeId"], snapshot["interrupt"]["interruptId"]
        where = f"{server.url}/v1/runs/{run_id}/interrupts/{node}"

        with httpx.Client() as browser:
            assert sign_in(browser, server.url, idp, "alice").status_code == 303
            voted = browser.post(where, json=ACCEPT, headers={**INBOX_HEADER, "Origin": origin(server.url)})
            assert voted.status_code == 200, voted.text
            assert voted.json()["status"] == "pending" and voted.json()["votes"]["accept"] == 1

        # Alice clicks Approve in Slack too: the same person, no second vote.
        body, headers = slack_signed(SIGNING_SECRET, block_action("U0ALICE", "accept", interrupt_id))
        clicked = httpx.post(f"{server.url}/notify/slack/interactions", content=body, headers=headers)
        assert clicked.status_code == 200, clicked.text
        waiting = httpx.get(f"{server.url}/v1/runs/{run_id}", headers=BOB).json()
        assert waiting["status"] == "waiting-approval"
        votes = waiting["interrupt"]["votes"]
        assert (votes["accept"], [v["voter"] for v in votes["votes"]]) == (1, ["alice"])
        assert votes["votes"][0]["subject"]["lane"] == "session"

        closed = httpx.post(where, json=ACCEPT, headers=BOB)
        assert closed.status_code == 200 and closed.json()["status"] == "resolved", closed.text
        wait_for_status(server.url, BOB, run_id, ("completed",))
        audit = httpx.get(f"{server.url}/v1/runs/{run_id}/audit", headers=BOB).json()["entries"]
        decided = [(a["action"], a["principal"]) for a in audit if a["action"].startswith("approval.")]
        assert decided == [
            ("approval.vote.accept", "alice"),
            ("approval.duplicate-vote", "alice"),
            ("approval.vote.accept", "bob"),
        ]
