"""examples/identity: the local OpenID provider for development, and ``serve`` with its identity file.

A person signs in through the provider's development login (authorization code flow with PKCE,
as the inbox's client ``bridge-inbox`` at its redirect URI); the tokens carry the claims the
identity file maps, so alice (in ``approvers``) answers an approval and a person in no group
cannot. The provider listens on its fixed address, 127.0.0.1:9400.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest

from tests.identity.provider import OpenIdProvider
from tests.identity.signin_flow import INBOX_HEADER, origin, sign_in
from tests.nodejs import node_binary
from tests.server import ServerProcess, wait_for_status

pytestmark = [pytest.mark.node, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "identity"
ISSUER = "http://127.0.0.1:9400"
CALLBACK = "http://127.0.0.1:8000/ui/auth/callback"


@pytest.fixture(scope="module")
def example_provider() -> Iterator[str]:
    """``node examples/identity/provider.mjs``, until the module's tests are done; its issuer."""
    node = node_binary("example identity provider")
    assert (EXAMPLE / "node_modules" / "oidc-provider").is_dir(), "run `npm --prefix examples/identity ci` first"
    proc = subprocess.Popen(
        [node, str(EXAMPLE / "provider.mjs")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        start_new_session=True,
    )
    output: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            if f"issuer {ISSUER}" in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(60), "the example provider did not start (is 127.0.0.1:9400 taken?):\n" + "".join(output)
        yield ISSUER
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


@pytest.fixture(scope="module")
def server(example_provider: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("example-identity")
    # On the address the example's inbox client returns to, as the sign-in page serves it.
    args = ["--identity-config", str(EXAMPLE / "identity.json")]
    with ServerProcess(folder / "serve.db", args, port=8000) as started:
        yield started


def _service_run(server: ServerProcess) -> tuple[str, str]:
    """The demo service's token (client credentials at the example provider) and a run of the demo approval it
    started with it."""
    service: str = httpx.post(
        f"{ISSUER}/token",
        data={"grant_type": "client_credentials", "scope": "runs:create runs:read"},
        auth=("demo-service", "demo-service-dev-secret"),
    ).json()["access_token"]
    started = httpx.post(
        f"{server.url}/v1/runs",
        json={"workflowId": "demo-expense-approval"},
        headers={"Authorization": f"Bearer {service}"},
    )
    assert started.status_code == 201, started.text
    return service, str(started.json()["runId"])


def _claims(jwt: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(base64.urlsafe_b64decode(jwt.split(".")[1] + "=="))
    return found


def _sign_in(login: str) -> dict[str, Any]:
    """The tokens the inbox's client gets after ``login`` signs in on the provider's development pages."""
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "client_id": "bridge-inbox",
        "response_type": "code",
        "redirect_uri": CALLBACK,
        "scope": "openid profile email",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s-1",
    }
    with httpx.Client(base_url=ISSUER, timeout=30) as browser:
        page = browser.get("/auth", params=query)
        for _ in range(10):
            where = page.headers.get("location")
            if where and where.startswith(CALLBACK):
                break
            if where:
                page = browser.get(where)
                continue
            action = re.search(r'action="([^"]+)"', page.text)
            assert page.status_code == 200 and action, page.text
            form = {"prompt": "login", "login": login, "password": "any"} if 'name="login"' in page.text else {}
            page = browser.post(action.group(1), data=form or {"prompt": "consent"})
        else:
            raise AssertionError(f"the sign-in never returned to {CALLBACK}")
        code = re.search(r"[?&]code=([^&]+)", where)
        assert code, where
        tokens = browser.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code.group(1),
                "redirect_uri": CALLBACK,
                "code_verifier": verifier,
            },
            auth=("bridge-inbox", "bridge-inbox-dev-secret"),
        )
        assert tokens.status_code == 200, tokens.text
        found: dict[str, Any] = tokens.json()
        return found


def test_alice_signs_in_and_answers_an_approval(server: ServerProcess) -> None:
    tokens = _sign_in("alice")
    identity = _claims(tokens["id_token"])
    assert (identity["iss"], identity["aud"], identity["sub"]) == (ISSUER, "bridge-inbox", "alice")
    assert identity["preferred_username"] == "alice" and identity["groups"] == ["approvers"]
    assert (identity["name"], identity["email"]) == ("Alice Martin", "alice@example.com")
    access = tokens["access_token"]
    assert _claims(access)["aud"] == "http://127.0.0.1:8000"
    _, run_id = _service_run(server)
    alice = {"Authorization": f"Bearer {access}"}
    wait_for_status(server.url, alice, run_id, ("waiting-approval",))
    where = f"{server.url}/v1/runs/{run_id}/interrupts/review"
    # A person in no group signs in too, and may not answer.
    nobody = {"Authorization": f"Bearer {_sign_in('carol')['access_token']}"}
    refused = httpx.post(where, json={"resumeValue": {"action": "accept"}}, headers=nobody)
    assert refused.status_code == 403 and refused.json()["details"]["requiredScope"] == "approvals:respond"
    answered = httpx.post(where, json={"resumeValue": {"action": "accept"}}, headers=alice)
    assert answered.status_code == 200, answered.text
    assert answered.json()["resumeValue"]["decidedBy"] == "alice"


def test_bob_is_an_approver_too(server: ServerProcess) -> None:
    identity = _claims(_sign_in("bob")["id_token"])
    assert (identity["preferred_username"], identity["name"], identity["groups"]) == ("bob", "Bob Chen", ["approvers"])


def test_alice_signs_in_to_the_inbox_through_the_bridge_and_answers_as_herself(server: ServerProcess) -> None:
    """The page's browser steps, by httpx: the inbox's sign-in with the example's provider and identity file."""
    assert httpx.get(f"{server.url}/ui/auth/provider").json() == {"issuer": ISSUER, "name": "the local provider"}
    service, run_id = _service_run(server)
    wait_for_status(server.url, {"Authorization": f"Bearer {service}"}, run_id, ("waiting-approval",))
    with httpx.Client(timeout=30) as browser:
        provider = cast(OpenIdProvider, SimpleNamespace(issuer=ISSUER))
        assert sign_in(browser, server.url, provider, "alice").status_code == 303
        me = browser.get(f"{server.url}/ui/api/me").json()
        assert (me["principal"], me["name"], me["lane"]) == ("alice", "Alice Martin", "session")
        answered = browser.post(
            f"{server.url}/v1/runs/{run_id}/interrupts/review",
            json={"resumeValue": {"action": "accept"}},
            headers={**INBOX_HEADER, "Origin": origin(server.url)},
        )
        assert answered.status_code == 200, answered.text
        assert answered.json()["resumeValue"]["decidedBy"] == "alice"
        signed_out = browser.post(
            f"{server.url}/ui/auth/logout", headers={**INBOX_HEADER, "Origin": origin(server.url)}
        )
        assert signed_out.status_code == 204
