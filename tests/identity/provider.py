"""A real OpenID provider (npm ``oidc-provider``, tests/node/oidc_provider.mjs) on 127.0.0.1, and tokens from it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from typing import Any

import httpx

from tests.nodejs import NODE_DIR, node_binary

#: The audience (RFC 8707 resource) the provider's access tokens name.
AUDIENCE = "urn:openwop-bridge:test"
#: The scopes the resource grants.
SCOPE = "runs:read runs:create interrupts:read approvals:respond workflows:read"
INBOX = {"client_id": "bridge-inbox", "client_secret": "inbox-secret-0123", "redirect_uris": ["http://127.0.0.1/cb"]}


def client(client_id: str, *, ttl: int = 300, **claims: Any) -> dict[str, Any]:
    """A client_credentials client of the provider, its tokens lasting ``ttl`` seconds and carrying ``claims``."""
    return {"client_id": client_id, "client_secret": f"{client_id}-secret-0123", "ttl": ttl, "claims": claims}


#: The clients every test provider has.
CLIENTS = [
    client("alice-app", preferred_username="alice", groups=["approvers"]),
    client("service", preferred_username="deploy-bot"),
    client("long-lived", ttl=7200, preferred_username="carol"),
    client("nameless"),
    client("other-tenant", preferred_username="mallory", org="tenant-b"),
    client("introspector"),
]
#: The client the host asks the provider about tokens with (``exp-and-recheck``).
INTROSPECTOR = {"clientId": "introspector", "clientSecret": "introspector-secret-0123"}


class OpenIdProvider:
    """``node oidc_provider.mjs`` in its own process, until :meth:`stop`."""

    def __init__(
        self,
        clients: list[dict[str, Any]] | None = None,
        *,
        redirect_uris: list[str] | None = None,
        accounts: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """``redirect_uris``: where the inbox client may be sent back to; ``accounts``: the claims of people
        signing in, by login name (each also has ``sub``, ``name`` and ``preferred_username`` equal to it)."""
        self.clients = {c["client_id"]: c for c in clients or CLIENTS}
        inbox = {**INBOX, "redirect_uris": redirect_uris or INBOX["redirect_uris"]}
        config = {
            "audience": AUDIENCE,
            "scope": SCOPE,
            "clients": list(self.clients.values()),
            "inbox": inbox,
            "accounts": accounts or {},
        }
        node = node_binary("identity", "oidc-provider")
        self.proc = subprocess.Popen(
            [node, "oidc_provider.mjs"],
            cwd=NODE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OIDC_TEST_CONFIG": json.dumps(config)},
            start_new_session=True,
        )
        self.output: list[str] = []
        ready = threading.Event()
        self.issuer = ""

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.output.append(line)
                if line.startswith("OIDC_PROVIDER_READY "):
                    self.issuer = line.split()[1]
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60):
            self.stop()
            raise RuntimeError("the OpenID provider did not start:\n" + "".join(self.output))

    def token(self, client_id: str, scope: str = SCOPE, **params: str) -> str:
        """An access token (a JWT for :data:`AUDIENCE`) by the client credentials grant."""
        found = self.clients[client_id]
        answer = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": AUDIENCE, **params},
            auth=(client_id, found["client_secret"]),
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token

    def revoke(self, token: str, client_id: str) -> None:
        """Revoke ``token`` at the provider (RFC 7009), as the client it was issued to."""
        answer = httpx.post(
            f"{self.issuer}/token/revocation",
            data={"token": token, "token_type_hint": "access_token"},
            auth=(client_id, self.clients[client_id]["client_secret"]),
            timeout=30,
        )
        assert answer.status_code == 200, answer.text

    def rotate(self, *, keep_old: bool) -> str:
        """A new signing key (the old one still published with ``keep_old``); its kid."""
        answer = httpx.post(f"{self.issuer}/_test/rotate", params={"keep": "1" if keep_old else "0"}, timeout=30)
        answer.raise_for_status()
        kid: str = answer.json()["kid"]
        return kid

    def signing_key(self) -> dict[str, Any]:
        """The private signing key in use (a test signs tokens of its own with it)."""
        found: dict[str, Any] = httpx.get(f"{self.issuer}/_test/signing-key", timeout=30).json()
        return found

    def stop(self) -> None:
        """Stop the provider's process."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def issuer_config(provider: OpenIdProvider, **over: Any) -> dict[str, Any]:
    """The identity file's entry for ``provider`` (the issue's example, the provider's claims)."""
    entry: dict[str, Any] = {
        "issuer": provider.issuer,
        "lane": "oauth2",
        "audience": AUDIENCE,
        "revocation": "exp-only",
        "revocationWindowSeconds": 3600,
        "claims": {"principal": "preferred_username", "tenant": "org", "roles": "groups", "scopes": "scope"},
        "defaultTenant": "default",
        "roleScopes": {"approvers": ["runs:read", "interrupts:read", "approvals:respond"]},
    }
    entry.update(over)
    return entry
