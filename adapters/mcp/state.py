"""``requestState`` across instances and restarts: one sealing key in the store, and single use.

The SDK's :class:`~mcp.server.request_state.RequestStateBoundary` seals the state
(AES-GCM) and checks its expiry, caller and tool. Two things it leaves to the
server are kept here, in the engine's adapter state so every instance on one
database shares them:

- the sealing key: a random secret written once (``mcp.key``), so a state sealed
  before a restart, or by another instance, still opens;
- the used states (``mcp.used``): each state carries a nonce that its retry
  claims once; a replay finds the nonce taken and is refused. Claims older than
  twice the state's lifetime are deleted (the boundary refuses those states
  anyway), so the ledger stays bounded by the traffic of that window.
"""

from __future__ import annotations

import secrets

from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

from bridge import Engine

KEY_NAMESPACE = "mcp.key"
USED_NAMESPACE = "mcp.used"
STATE_TTL_S = 600.0


class StoredKeyCodec:
    """A request-state codec whose key is read from the store when the server starts."""

    def __init__(self) -> None:
        self._codec: AESGCMRequestStateCodec | None = None

    async def load(self, engine: Engine) -> None:
        """Read the shared sealing secret, writing a fresh one if this database has none yet."""
        state = engine.adapter_state(KEY_NAMESPACE)
        await state.put("seal", secrets.token_hex(32), only_if_absent=True)
        secret = await state.get("seal")
        if not isinstance(secret, str):
            raise RuntimeError("the stored MCP sealing secret is not a string")
        self._codec = AESGCMRequestStateCodec([secret])

    def seal(self, payload: bytes) -> str:
        """Seal with the shared key (the server refuses to seal before :meth:`load`)."""
        if self._codec is None:
            raise RuntimeError("the MCP sealing key is not loaded yet")
        return self._codec.seal(payload)

    def unseal(self, token: str) -> bytes:
        """Open a token sealed with the shared key."""
        if self._codec is None:
            raise InvalidRequestState("no key loaded")
        return self._codec.unseal(token)


def new_nonce() -> str:
    """The one-use mark a fresh state carries."""
    return secrets.token_urlsafe(16)


async def claim(engine: Engine, nonce: str) -> bool:
    """Take a state's nonce; False when it was taken before (a replay). Forgets claims past their window."""
    used = engine.adapter_state(USED_NAMESPACE)
    await used.forget_older_than(int(2 * STATE_TTL_S * 1000))
    return await used.put(nonce, True, only_if_absent=True)
