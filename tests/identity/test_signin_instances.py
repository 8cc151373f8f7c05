"""Two ``serve`` processes on one PostgreSQL database share the inbox's sessions: a session opened on one
authenticates on the other, survives a restart, and signing out on one revokes it on the other."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.identity.provider import OpenIdProvider
from tests.identity.signin_flow import ACCOUNTS, INBOX_HEADER, identity_file, origin, secret_env, sign_in
from tests.server import ServerProcess, free_port, wait_for_status

pytestmark = [pytest.mark.node, pytest.mark.slow]

KEY = "ops-key-instances-0001"
OPS = {"Authorization": f"Bearer {KEY}"}


def _server(db: str, identity: Path, port: int, log: Path) -> ServerProcess:
    server = ServerProcess(db, ["--identity-config", str(identity), "--api-key", f"ops={KEY}"], port, secret_env())
    server.log = log
    return server


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[tuple[OpenIdProvider, ServerProcess, ServerProcess]]:
    ports = free_port(), free_port()
    idp = OpenIdProvider(redirect_uris=[f"http://127.0.0.1:{ports[0]}/ui/auth/callback"], accounts=ACCOUNTS)
    identity = identity_file(tmp_path, idp)
    first = _server(pg_url, identity, ports[0], tmp_path / "first.log")
    second = _server(pg_url, identity, ports[1], tmp_path / "second.log")
    try:
        first.start()
        second.start()
        yield idp, first, second
    finally:
        second.stop()
        first.stop()
        idp.stop()


def test_a_session_is_shared_by_instances_and_revoked_on_all(
    pair: tuple[OpenIdProvider, ServerProcess, ServerProcess],
) -> None:
    idp, first, second = pair
    with httpx.Client() as browser:
        assert sign_in(browser, first.url, idp, "alice").status_code == 303
        cookie = {"owb_session": browser.cookies["owb_session"]}

    # The other instance knows the session, and answers as the person with it.
    me = httpx.get(f"{second.url}/ui/api/me", cookies=cookie)
    assert me.status_code == 200 and me.json()["principal"] == "alice" and me.json()["lane"] == "session"
    created = httpx.post(f"{first.url}/v1/runs", json={"workflowId": "demo-expense-approval"}, headers=OPS)
    run_id = created.json()["runId"]
    wait_for_status(first.url, OPS, run_id, ("waiting-approval",))
    answered = httpx.post(
        f"{second.url}/v1/runs/{run_id}/interrupts/review",
        json={"resumeValue": {"action": "accept"}},
        headers={**INBOX_HEADER, "Origin": origin(second.url)},
        cookies=cookie,
    )
    assert answered.status_code == 200 and answered.json()["resumeValue"]["decidedBy"] == "alice"

    # A restart keeps it.
    first.stop()
    first.start()
    assert httpx.get(f"{first.url}/ui/api/me", cookies=cookie).json()["principal"] == "alice"

    # Signing out on the second instance revokes the session on the first.
    out = httpx.post(
        f"{second.url}/ui/auth/logout", headers={**INBOX_HEADER, "Origin": origin(second.url)}, cookies=cookie
    )
    assert out.status_code == 204
    for server in (first, second):
        refused = httpx.get(f"{server.url}/v1/interrupts", cookies=cookie)
        assert refused.status_code == 401 and refused.json()["error"] == "credential_revoked"
