"""An issuer's signing keys: found through its discovery document, fetched asynchronously and cached.

The keys are fetched when a token first needs them, again when they are older than
``keysMaxAgeSeconds``, and at once when a token names a ``kid`` the set lacks (the provider
rotated), at most once per :data:`REFETCH_INTERVAL_S` seconds so that tokens with made-up key
ids cannot make the host hammer the provider. A refetched set replaces the old one: a key
the provider removed stops verifying.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from openwop_bridge.identity.config import IssuerConfig, check_url
from openwop_bridge.identity.errors import IdentityUnverifiedError

__all__ = ["REFETCH_INTERVAL_S", "IssuerKeys", "discovery_urls"]

log = logging.getLogger("openwop_bridge.identity")

#: The least time between two fetches of an issuer's keys caused by unknown key ids.
REFETCH_INTERVAL_S = 5.0
#: The largest discovery document or key set read.
MAX_DOCUMENT_BYTES = 512 * 1024


def discovery_urls(issuer: IssuerConfig) -> list[str]:
    """Where the issuer's metadata is: OpenID discovery, and for ``oauth2`` RFC 8414's path-inserted form first."""
    base = issuer.issuer.rstrip("/")
    urls = [base + "/.well-known/openid-configuration"]
    if issuer.lane == "oauth2":
        scheme, _, rest = issuer.issuer.partition("://")
        host, _, path = rest.partition("/")
        urls.insert(0, f"{scheme}://{host}/.well-known/oauth-authorization-server" + (f"/{path}" if path else ""))
    return urls


class IssuerKeys:
    """The cached key set of one issuer."""

    def __init__(
        self,
        issuer: IssuerConfig,
        client: httpx.AsyncClient,
        *,
        refetch_interval_s: float = REFETCH_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self._client = client
        self._refetch_interval_s = refetch_interval_s
        self._clock = clock
        self._keys: KeySet | None = None
        self._fetched_at = float("-inf")
        self._jwks_uri = issuer.jwks_uri
        self._metadata: dict[str, Any] | None = None
        self._lock = asyncio.Lock()
        #: How many times the key set was fetched (the tests read it).
        self.fetches = 0

    async def key_set(self, kid: str | None) -> KeySet:
        """The keys to verify a token naming ``kid`` with: fetched when missing, stale, or lacking ``kid``."""
        keys = self._keys
        fresh = self._clock() - self._fetched_at < self.issuer.keys_max_age_seconds
        if keys is not None and fresh and (kid is None or _has(keys, kid)):
            return keys
        async with self._lock:
            keys, age = self._keys, self._clock() - self._fetched_at
            if keys is not None and age < self.issuer.keys_max_age_seconds and (kid is None or _has(keys, kid)):
                return keys  # another request fetched them meanwhile
            if age < self._refetch_interval_s:  # fetched (or failed to) a moment ago: not again yet
                if keys is None:
                    raise IdentityUnverifiedError(f"the keys of the issuer {self.issuer.issuer!r} cannot be fetched")
                return keys
            return await self._fetch()

    async def _fetch(self) -> KeySet:
        try:
            if self._jwks_uri is None:
                self._jwks_uri = await self._find_jwks_uri()
            document = await self._get_json(self._jwks_uri)
            keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
        except (httpx.HTTPError, ValueError, JoseError, TypeError, KeyError) as exc:
            log.warning("cannot fetch the keys of %s: %s", self.issuer.issuer, exc)
            self._fetched_at = self._clock()  # a failing provider is asked again after the interval, not per request
            if self._keys is not None:
                return self._keys
            raise IdentityUnverifiedError(f"the keys of the issuer {self.issuer.issuer!r} cannot be fetched") from None
        self._keys, self._fetched_at = keys, self._clock()
        self.fetches += 1
        return keys

    async def _find_jwks_uri(self) -> str:
        jwks_uri = (await self.metadata()).get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise ValueError(f"the metadata of {self.issuer.issuer} names no jwks_uri")
        return check_url(jwks_uri, "jwks_uri")

    async def metadata(self) -> dict[str, Any]:
        """The issuer's discovery document (fetched once; a failure is raised and asked again next time)."""
        if self._metadata is not None:
            return self._metadata
        last: Exception | None = None
        for url in discovery_urls(self.issuer):
            try:
                metadata = await self._get_json(url)
            except (httpx.HTTPError, ValueError) as exc:
                last = exc
                continue
            if metadata.get("issuer") != self.issuer.issuer:
                raise ValueError(f"the metadata at {url} names the issuer {metadata.get('issuer')!r}")
            self._metadata = metadata
            return metadata
        raise ValueError(f"no discovery document: {last}")

    async def _get_json(self, url: str) -> dict[str, Any]:
        async with self._client.stream("GET", url, headers={"Accept": "application/json"}) as response:
            response.raise_for_status()
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ValueError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
        found = json.loads(body)
        if not isinstance(found, dict):
            raise ValueError(f"{url} did not answer a JSON object")
        return found


def _has(keys: KeySet, kid: str) -> bool:
    return any(key.kid == kid for key in keys.keys)
