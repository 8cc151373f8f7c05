"""The signing keys of the links the bridge mints, as a store keeps them."""

from __future__ import annotations

from typing import Protocol


class SigningKeyStore(Protocol):
    """Signing keys: those that verify, one of them active."""

    async def signing_keys(self) -> list[tuple[str, str, bool]]:
        """``(kid, secret, active)`` for every key that still verifies."""

    async def add_signing_key(self, kid: str, secret: str, now_ms: int, *, activate: bool) -> None:
        """Store a signing key; when ``activate``, it becomes the only active one."""

    async def retire_signing_key(self, kid: str, now_ms: int) -> None:
        """Stop a key from verifying."""
