"""Asking an ``exp-and-recheck`` issuer whether a token is still active: RFC 7662 token introspection.

The endpoint is the issuer's ``introspectionUri``, else its discovery document's
``introspection_endpoint``. The host posts the token form-encoded (``token``,
``token_type_hint=access_token``) and authenticates as the configured introspection client
(HTTP Basic, RFC 6749 §2.3.1). The answer must be a JSON object whose ``active`` is a boolean:
``true`` keeps the token, ``false`` revokes it. Anything else (no answer, an error status, a
body that is not such an object) means the provider could not be asked, and the token is
refused: the host never accepts one it could not check (identity.md §2.1, fail closed). The
client's secret and the token are never logged, and no refusal names them.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from openwop_bridge.identity.config import IssuerConfig, check_url
from openwop_bridge.identity.errors import IdentityUnverifiedError
from openwop_bridge.identity.keys import MAX_DOCUMENT_BYTES, IssuerKeys

__all__ = ["Introspector"]

log = logging.getLogger("openwop_bridge.identity")


class Introspector:
    """The RFC 7662 client of one ``exp-and-recheck`` issuer."""

    def __init__(self, issuer: IssuerConfig, client: httpx.AsyncClient, keys: IssuerKeys) -> None:
        if issuer.introspection is None:
            raise ValueError(f"the issuer {issuer.issuer!r} names no introspection client")
        self.issuer = issuer
        self._credentials = issuer.introspection
        self._client = client
        self._keys = keys
        self._endpoint = issuer.introspection_uri
        #: How many times the provider was asked (the tests read it).
        self.calls = 0

    async def active(self, token: str) -> bool:
        """Whether the provider says ``token`` is active; :class:`IdentityUnverifiedError` when it cannot say."""
        self.calls += 1
        try:
            endpoint = self._endpoint or await self._find_endpoint()
            answer = await self._post(endpoint, token)
        except (httpx.HTTPError, ValueError) as exc:
            # The message names the issuer and what went wrong; neither the token nor the secret is in it.
            log.warning("the introspection endpoint of %s could not be asked: %s", self.issuer.issuer, exc)
            raise IdentityUnverifiedError(
                f"the identity provider {self.issuer.issuer!r} could not be asked whether the token is still "
                "active, so it is not accepted; try again later",
                details={"issuer": self.issuer.issuer},
            ) from None
        return answer

    async def _find_endpoint(self) -> str:
        endpoint = (await self._keys.metadata()).get("introspection_endpoint")
        if not isinstance(endpoint, str):
            raise ValueError("its discovery document names no introspection_endpoint (set introspectionUri)")
        self._endpoint = check_url(endpoint, "introspection_endpoint")
        return self._endpoint

    async def _post(self, endpoint: str, token: str) -> bool:
        secret = self._credentials.client_secret.get_secret_value()
        async with self._client.stream(
            "POST",
            endpoint,
            data={"token": token, "token_type_hint": "access_token"},
            auth=httpx.BasicAuth(self._credentials.client_id, secret),
            headers={"Accept": "application/json"},
        ) as response:
            if response.status_code != 200:
                raise ValueError(f"it answered {response.status_code}")
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ValueError(f"it answered more than {MAX_DOCUMENT_BYTES} bytes")
        try:
            found: Any = json.loads(body)
        except ValueError:
            raise ValueError("its answer is not JSON") from None
        active = found.get("active") if isinstance(found, dict) else None
        if not isinstance(active, bool):
            raise ValueError("its answer is not an RFC 7662 object with a boolean 'active'")
        return active
