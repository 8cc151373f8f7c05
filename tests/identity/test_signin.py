"""Signing in to the inbox through a real OpenID provider, driven by httpx: the code flow with PKCE, the
session cookie authenticating the inbox's requests, cross-site refusals, sign-out and tampered sign-ins."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from openapi_spec_validator import validate

from openwop_bridge.identity.signin import PendingLogin
from openwop_bridge.spec import v2 as spec
from tests.identity.provider import OpenIdProvider
from tests.identity.signin_flow import (
    ACCOUNTS,
    INBOX_HEADER,
    authorize,
    cookie_attributes,
    identity_file,
    origin,
    secret_env,
    sign_in,
)
from tests.server import ServerProcess, free_port, wait_for_status

pytestmark = [pytest.mark.node, pytest.mark.slow]

KEY = "ops-key-signin-0001"
OPS = {"Authorization": f"Bearer {KEY}"}
HTTPS_PUBLIC = "https://inbox.example"


@pytest.fixture(scope="module")
def ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture(scope="module")
def idp(ports: tuple[int, int]) -> Iterator[OpenIdProvider]:
    uris = [f"http://127.0.0.1:{ports[0]}/ui/auth/callback", f"{HTTPS_PUBLIC}/ui/auth/callback"]
    started = OpenIdProvider(redirect_uris=uris, accounts=ACCOUNTS)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def server(
    idp: OpenIdProvider, ports: tuple[int, int], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("signin")
    args = ["--identity-config", str(identity_file(folder, idp)), "--api-key", f"ops={KEY}"]
    with ServerProcess(folder / "serve.db", args, port=ports[0], env=secret_env()) as started:
        yield started


@pytest.fixture(scope="module")
def https_server(
    idp: OpenIdProvider, ports: tuple[int, int], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("signin-https")
    args = [
        "--identity-config",
        str(identity_file(folder, idp)),
        "--api-key",
        f"ops={KEY}",
        "--public-url",
        HTTPS_PUBLIC,
    ]
    with ServerProcess(folder / "serve.db", args, port=ports[1], env=secret_env()) as started:
        yield started


def _approval(server: ServerProcess) -> str:
    created = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "demo-expense-approval"}, headers=OPS)
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    wait_for_status(server.url, OPS, run_id, ("waiting-approval",))
    return run_id


def test_signing_in_opens_a_session_that_answers_as_the_person(idp: OpenIdProvider, server: ServerProcess) -> None:
    with httpx.Client() as browser:
        start = browser.get(f"{server.url}/ui/auth/login")
        assert start.status_code == 303
        query = parse_qs(urlsplit(start.headers["location"]).query)
        assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
        assert query["redirect_uri"] == [f"{server.url}/ui/auth/callback"]
        assert query["state"][0] and query["nonce"][0] and query["response_type"] == ["code"]
        pending = cookie_attributes(start, "owb_login")
        assert {"httponly", "path", "samesite", "max-age"} <= set(pending) and "secure" not in pending
        done = browser.get(authorize(browser, idp, start, "alice"))
        assert done.status_code == 303 and done.headers["location"] == "../"
        cookie = cookie_attributes(done, "owb_session")
        assert (cookie["path"], cookie["samesite"].lower(), cookie["max-age"]) == ("/", "lax", "43200")
        assert "httponly" in cookie and "secure" not in cookie
        assert cookie_attributes(done, "owb_login")["max-age"] == "0"  # the pending sign-in is spent

        me = browser.get(f"{server.url}/ui/api/me")
        assert me.status_code == 200, me.text
        assert me.json()["principal"] == "alice" and me.json()["name"] == "Alice Example"
        assert me.json()["email"] == "alice@example.com" and me.json()["lane"] == "session"
        assert me.json()["canAnswer"] and me.json()["canReadInbox"]

        run_id = _approval(server)
        assert browser.get(f"{server.url}/ui/api/inbox/count").json()["pending"] >= 1
        with browser.stream("GET", f"{server.url}/ui/api/inbox/events") as feed:
            assert feed.status_code == 200 and feed.headers["content-type"].startswith("text/event-stream")
        listed = browser.get(f"{server.url}/v1/interrupts", params={"status": "pending"})
        assert listed.status_code == 200 and run_id in {i["runId"] for i in listed.json()["items"]}
        where = f"{server.url}/v1/runs/{run_id}/interrupts/review"
        assert browser.get(where).status_code == 200
        answer = {"resumeValue": {"action": "accept"}}
        answered = browser.post(where, json=answer, headers={**INBOX_HEADER, "Origin": origin(server.url)})
        assert answered.status_code == 200, answered.text
        assert answered.json()["resumeValue"]["decidedBy"] == "alice"
        # The decision records the session's subject: the provider's issuer and sub, on the session lane.
        decided = answered.json()["resumeValue"]["decidedBySubject"]
        assert (decided["issuer"], decided["lane"]) == (idp.issuer, "session") and decided["subjectId"]

        # An Authorization header wins over the cookie.
        assert browser.get(f"{server.url}/ui/api/me", headers=OPS).json()["principal"] == "ops"


def test_the_session_keeps_the_rules_of_a_token(idp: OpenIdProvider, server: ServerProcess) -> None:
    with httpx.Client() as bob:
        assert sign_in(bob, server.url, idp, "bob").status_code == 303
        me = bob.get(f"{server.url}/ui/api/me").json()
        assert (me["principal"], me["canReadInbox"], me["canAnswer"]) == ("bob", True, False)
        run_id = _approval(server)
        refused = bob.post(
            f"{server.url}/v1/runs/{run_id}/interrupts/review",
            json={"resumeValue": {"action": "accept"}},
            headers={**INBOX_HEADER, "Origin": origin(server.url)},
        )
        assert refused.status_code == 403 and refused.json()["details"]["requiredScope"] == "approvals:respond"
    with httpx.Client() as mallory:
        # Mallory's ID token names a tenant the issuer may not speak for: no session.
        refused = sign_in(mallory, server.url, idp, "mallory")
        assert refused.status_code == 401 and refused.json()["error"] == "identity_unresolvable"
        assert "owb_session" not in mallory.cookies


def test_a_cookie_never_authorises_a_cross_site_request(idp: OpenIdProvider, server: ServerProcess) -> None:
    with httpx.Client() as browser:
        sign_in(browser, server.url, idp)
        run_id = _approval(server)
        where = f"{server.url}/v1/runs/{run_id}/interrupts/review"
        answer = {"resumeValue": {"action": "accept"}}
        own = origin(server.url)
        for headers in (
            {**INBOX_HEADER, "Origin": "https://evil.example"},
            {**INBOX_HEADER, "Origin": "null"},
            INBOX_HEADER,  # no Origin, no Referer
            {"Origin": own},  # the inbox's header missing
            {**INBOX_HEADER, "Referer": "https://evil.example/ui/"},
            {**INBOX_HEADER, "Origin": own.replace("127.0.0.1", "localhost")},
        ):
            refused = browser.post(where, json=answer, headers=headers)
            assert refused.status_code == 403, (headers, refused.text)
            assert refused.json()["error"] == "forbidden" and "inbox page" in refused.json()["message"]
        assert browser.get(where).json()["status"] == "pending"
        # The Referer stands in for a missing Origin.
        answered = browser.post(where, json=answer, headers={**INBOX_HEADER, "Referer": f"{own}/ui/"})
        assert answered.status_code == 200, answered.text
        # Signing out is a state change too.
        refused = browser.post(f"{server.url}/ui/auth/logout", headers={"Origin": "https://evil.example"})
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
        assert browser.get(f"{server.url}/ui/api/me").status_code == 200


def test_signing_out_revokes_the_session(idp: OpenIdProvider, server: ServerProcess) -> None:
    with httpx.Client() as browser:
        sign_in(browser, server.url, idp)
        old = browser.cookies["owb_session"]
        out = browser.post(f"{server.url}/ui/auth/logout", headers={**INBOX_HEADER, "Origin": origin(server.url)})
        assert out.status_code == 204
        assert cookie_attributes(out, "owb_session")["max-age"] == "0"
    revoked = httpx.get(f"{server.url}/ui/api/me", cookies={"owb_session": old})
    assert revoked.status_code == 401 and revoked.json()["error"] == "credential_revoked"
    assert revoked.headers["www-authenticate"].startswith("Bearer resource_metadata=")
    listed = httpx.get(f"{server.url}/v1/interrupts", cookies={"owb_session": old})
    assert listed.status_code == 401 and listed.json()["error"] == "credential_revoked"
    unknown = httpx.get(f"{server.url}/ui/api/me", cookies={"owb_session": "not-a-session-id"})
    assert unknown.status_code == 401 and unknown.json()["error"] == "unauthenticated"
    # The cookie authenticates the inbox's endpoints only.
    with httpx.Client() as browser:
        sign_in(browser, server.url, idp)
        live = browser.cookies["owb_session"]
    assert httpx.get(f"{server.url}/v1/interrupts", cookies={"owb_session": live}).status_code == 200
    elsewhere = httpx.get(f"{server.url}/runs", headers={"OpenWOP-Version": "2"}, cookies={"owb_session": live})
    assert elsewhere.status_code == 401, elsewhere.text


def _host_secret(server: ServerProcess) -> bytes:
    with sqlite3.connect(server.db) as db:
        (value,) = db.execute("SELECT value FROM kv WHERE namespace='ui.session.secret' AND key='seal'").fetchone()
    return str(json.loads(value)["secret"]).encode()


def _callback(server: ServerProcess, callback: str, **changes: str) -> str:
    query = {k: v[0] for k, v in parse_qs(urlsplit(callback).query).items()}
    return f"{server.url}/ui/auth/callback?{urlencode({**query, **changes})}"


def test_tampered_sign_ins_are_refused(idp: OpenIdProvider, server: ServerProcess) -> None:
    def started(client: httpx.Client) -> tuple[httpx.Response, str]:
        start = client.get(f"{server.url}/ui/auth/login")
        return start, authorize(client, idp, start, "alice")

    with httpx.Client() as browser:
        start, callback = started(browser)
        sealed = browser.cookies["owb_login"]
        secret = _host_secret(server)
        pending = PendingLogin.open(sealed, secret, time.time())

        def answer(cookie: str, url: str = callback) -> httpx.Response:
            return httpx.get(url, cookies={"owb_login": cookie})

        # The state in the answer is not the pending one.
        refused = answer(sealed, _callback(server, callback, state="forged-state"))
        assert refused.status_code == 401 and "state" in refused.json()["message"]
        # No sign-in in progress, or a pending sign-in altered, sealed by another host, or stale.
        assert httpx.get(callback).status_code == 401
        assert answer(sealed[:-6] + "AAAAAA").status_code == 401
        assert answer(PendingLogin(**_fields(pending)).seal(b"another host's secret")).status_code == 401
        stale = PendingLogin(**{**_fields(pending), "expires_at": time.time() - 1}).seal(secret)
        assert "too long" in answer(stale).json()["message"]
        # The ID token's nonce is not this sign-in's.
        other_nonce = PendingLogin(**{**_fields(pending), "nonce": "another-nonce"}).seal(secret)
        refused = answer(other_nonce)
        assert refused.status_code == 401 and refused.json()["error"] == "identity_unverified"
        assert "nonce" in refused.json()["message"]

    with httpx.Client() as browser:
        _, callback = started(browser)
        pending = PendingLogin.open(browser.cookies["owb_login"], secret, time.time())
        # The PKCE verifier is not the one the code was issued for: the provider refuses the exchange.
        other_verifier = PendingLogin(**{**_fields(pending), "code_verifier": "x" * 64}).seal(secret)
        refused = answer(other_verifier, callback)
        assert refused.status_code == 401 and refused.json()["details"]["providerError"] == "invalid_grant"
        assert "owb_session" not in refused.cookies
    del start


def _fields(pending: PendingLogin) -> dict[str, object]:
    return {
        "state": pending.state,
        "nonce": pending.nonce,
        "code_verifier": pending.code_verifier,
        "expires_at": pending.expires_at,
    }


def test_the_provider_refusing_is_a_401(idp: OpenIdProvider, server: ServerProcess) -> None:
    with httpx.Client() as browser:
        start = browser.get(f"{server.url}/ui/auth/login")
        state = parse_qs(urlsplit(start.headers["location"]).query)["state"][0]
        refused = browser.get(f"{server.url}/ui/auth/callback", params={"state": state, "error": "access_denied"})
        assert refused.status_code == 401 and refused.json()["details"]["providerError"] == "access_denied"


def test_over_https_the_cookies_are_secure_and_host_prefixed(idp: OpenIdProvider, https_server: ServerProcess) -> None:
    host = {"Host": "inbox.example"}
    with httpx.Client() as browser:
        start = browser.get(f"{https_server.url}/ui/auth/login", headers=host)
        assert parse_qs(urlsplit(start.headers["location"]).query)["redirect_uri"] == [
            f"{HTTPS_PUBLIC}/ui/auth/callback"
        ]
        pending = cookie_attributes(start, "__Host-owb_login")
        assert "secure" in pending and pending["path"] == "/" and "domain" not in pending
        callback = authorize(browser, idp, start, "alice")
        assert callback.startswith(f"{HTTPS_PUBLIC}/ui/auth/callback?")
        here = https_server.url + callback.removeprefix(HTTPS_PUBLIC)
        done = httpx.get(here, headers=host, cookies={"__Host-owb_login": pending["value"]})
        assert done.status_code == 303, done.text
        cookie = cookie_attributes(done, "__Host-owb_session")
        assert "secure" in cookie and "httponly" in cookie and cookie["path"] == "/" and "domain" not in cookie
        me = httpx.get(f"{https_server.url}/ui/api/me", headers=host, cookies={"__Host-owb_session": cookie["value"]})
        assert me.status_code == 200 and me.json()["principal"] == "alice"
        # Over https the plain name is not read.
        plain = httpx.get(f"{https_server.url}/ui/api/me", headers=host, cookies={"owb_session": cookie["value"]})
        assert plain.status_code == 401


def test_discovery_advertises_the_session_lane(idp: OpenIdProvider, server: ServerProcess) -> None:
    doc = httpx.get(f"{server.url}/.well-known/openwop", headers={"OpenWOP-Version": "2"}).json()
    assert spec.problems("capabilities.schema.json", doc) == []
    assert doc["auth"]["lanes"][-1] == {
        "lane": "session",
        "issuers": ["urn:openwop-bridge:session"],  # the host issues sessions: its own trust root (identity.md §2.2)
        "revocation": "next-request",
        "minimumAssurance": "bearer",
    }
    assert [lane["lane"] for lane in doc["auth"]["lanes"]] == ["api-key", "oidc", "session"]
    assert httpx.get(f"{server.url}/ui/auth/provider").json() == {"issuer": idp.issuer, "name": "127.0.0.1"}
    document = httpx.get(f"{server.url}/v1/openapi.json").json()
    validate(document)
    paths = document["paths"]
    assert {"get"} == set(paths["/ui/auth/login"]) == set(paths["/ui/auth/callback"]) == set(paths["/ui/auth/provider"])
    assert set(paths["/ui/auth/logout"]) == {"post"}


def test_without_an_inbox_section_or_pages_there_is_no_sign_in(idp: OpenIdProvider, tmp_path: Path) -> None:
    with_inbox = identity_file(tmp_path, idp)
    document = json.loads(with_inbox.read_text())
    del document["inbox"]
    without = tmp_path / "without-inbox.json"
    without.write_text(json.dumps(document))
    for args in (["--identity-config", str(without)], ["--identity-config", str(with_inbox), "--no-ui"]):
        with ServerProcess(tmp_path / f"serve-{len(args)}.db", args, env=secret_env()) as plain:
            assert httpx.get(f"{plain.url}/ui/auth/login").status_code == 404
            assert httpx.get(f"{plain.url}/ui/auth/provider").status_code == 404
            doc = httpx.get(f"{plain.url}/.well-known/openwop", headers={"OpenWOP-Version": "2"}).json()
            assert "session" not in [lane["lane"] for lane in doc["auth"]["lanes"]]
