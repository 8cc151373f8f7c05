"""Driving the inbox's sign-in with httpx: the host's login route, the provider's devInteractions login and
consent forms, and back to the host's callback (the tests decide whether and how to follow it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from tests.identity.provider import INBOX, OpenIdProvider, issuer_config

#: The people of the sign-in tests: claims the provider puts in their ID tokens.
ACCOUNTS: dict[str, dict[str, Any]] = {
    "alice": {"name": "Alice Example", "email": "alice@example.com", "groups": ["approvers"]},
    "bob": {"name": "Bob Reader", "groups": ["readers"]},
    "mallory": {"name": "Mallory", "org": "tenant-b", "groups": ["approvers"]},
}
#: The environment variable the identity file reads the inbox's client secret from.
SECRET_ENV = "INBOX_CLIENT_SECRET_TEST"
#: What the inbox's scripts send beside the cookie on a request that changes something.
INBOX_HEADER = {"X-Requested-With": "openwop-inbox"}


def identity_file(folder: Path, provider: OpenIdProvider, **sessions: int) -> Path:
    """An identity file trusting ``provider`` (the ``oidc`` lane) with its ``inbox`` client."""
    path = folder / "identity.json"
    document = {
        "issuers": [
            issuer_config(
                provider,
                lane="oidc",
                roleScopes={
                    "approvers": ["runs:read", "interrupts:read", "approvals:respond"],
                    "readers": ["interrupts:read"],
                },
            )
        ],
        "inbox": {
            "issuer": provider.issuer,
            "clientId": INBOX["client_id"],
            "clientSecret": {"env": SECRET_ENV},
            "scopes": ["openid", "profile", "email"],
        },
        "sessions": sessions or {"idleMs": 3_600_000, "absoluteMs": 43_200_000},
    }
    path.write_text(json.dumps(document))
    return path


def secret_env() -> dict[str, str]:
    """The environment ``serve`` reads the client secret from."""
    return {SECRET_ENV: INBOX["client_secret"]}


def _form_action(page: httpx.Response) -> str:
    found = re.search(r'<form[^>]*action="([^"]+)"', page.text)
    assert found is not None, page.text
    return urljoin(str(page.url), found.group(1).replace("&amp;", "&"))


def at_provider(client: httpx.Client, response: httpx.Response, issuer: str) -> httpx.Response:
    """Follow the provider's redirects while they stay at the provider; the page or the redirect away."""
    while response.is_redirect:
        target = urljoin(str(response.url), response.headers["location"])
        if not target.startswith(issuer + "/"):
            return response
        response = client.get(target)
    return response


def authorize(client: httpx.Client, provider: OpenIdProvider, start: httpx.Response, login: str) -> str:
    """From the host's redirect to the provider (``start``), sign in as ``login`` and consent; the callback URL
    the provider sends the browser back to (not followed)."""
    assert start.status_code == 303, start.text
    response = at_provider(client, client.get(start.headers["location"]), provider.issuer)
    for _ in range(3):
        if response.is_redirect:
            return urljoin(str(response.url), response.headers["location"])
        assert response.status_code == 200, response.text
        if 'name="login"' in response.text:
            answered = client.post(_form_action(response), data={"prompt": "login", "login": login, "password": "x"})
        else:
            answered = client.post(_form_action(response), data={"prompt": "consent"})
        response = at_provider(client, answered, provider.issuer)
    raise AssertionError(f"the provider never sent the browser back: {response.status_code} {response.text[:500]}")


def sign_in(client: httpx.Client, base: str, provider: OpenIdProvider, login: str = "alice") -> httpx.Response:
    """The whole sign-in: the host's callback's answer (a ``303`` to the inbox that sets the session cookie)."""
    callback = authorize(client, provider, client.get(f"{base}/ui/auth/login"), login)
    assert callback.startswith(f"{base}/ui/auth/callback?"), callback
    return client.get(callback)


def cookie_attributes(response: httpx.Response, name: str) -> dict[str, str]:
    """The attributes of the ``Set-Cookie`` for ``name`` (lower-cased names; flags map to "")."""
    for header in response.headers.get_list("set-cookie"):
        first, *attributes = [part.strip() for part in header.split(";")]
        if first.split("=", 1)[0] == name:
            found = {"value": first.split("=", 1)[1]}
            for attribute in attributes:
                key, _, value = attribute.partition("=")
                found[key.lower()] = value
            return found
    raise AssertionError(f"no Set-Cookie for {name}: {response.headers.get_list('set-cookie')}")


def origin(url: str) -> str:
    """The origin of ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
