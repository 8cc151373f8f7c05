"""``requestState`` across instances, restarts and rotations: sealing keys derived from the signing keys, single use.

The SDK's :class:`~mcp.server.request_state.RequestStateBoundary` seals the state
(AES-GCM) and checks its expiry, caller and tool. Two things it leaves to the
server are kept here, shared by every instance on one database:

- the sealing keys: derived from the engine's link-signing keys
  (:meth:`Engine.derived_keys`), the active one's first. ``openwop-bridge keys rotate``
  makes a new key seal while states sealed with the previous one still open (the
  overlap); ``keys retire --kid …`` drops that key and every state sealed with it.
  A state sealed with a key this instance has not loaded yet (rotated on another
  instance a moment ago) reloads the keys once before it is refused;
- the used states (``mcp.used``): each state carries a nonce that its retry
  claims once; a replay finds the nonce taken and is refused. Claims older than
  twice the state's lifetime are deleted (the boundary refuses those states
  anyway), so the ledger stays bounded by the traffic of that window.
"""

from __future__ import annotations

import secrets
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState
from openwop_bridge import Engine

#: The purpose the sealing keys are derived for (see :meth:`Engine.derived_keys`).
PURPOSE = "mcp request state"
USED_NAMESPACE = "mcp.used"
STATE_TTL_S = 600.0


class DerivedKeyCodec:
    """A request-state codec sealing with the engine's current derived key and opening with any of them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._keys: list[bytes] = []
        self._codec: AESGCMRequestStateCodec | None = None

    def _current(self) -> AESGCMRequestStateCodec:
        keys = self.engine.derived_keys(PURPOSE)
        if self._codec is None or keys != self._keys:
            self._codec, self._keys = AESGCMRequestStateCodec(keys), keys
        return self._codec

    def seal(self, payload: bytes) -> str:
        """Seal with the active key."""
        return self._current().seal(payload)

    def unseal(self, token: str) -> bytes:
        """Open a token sealed with any key that has not been retired."""
        return self._current().unseal(token)

    def knows(self, token: str) -> bool:
        """False only when ``token`` is well formed but sealed with a key not loaded here."""
        try:
            self.unseal(token)
        except InvalidRequestState as exc:
            return str(exc) != "unknown key"
        return True


class ReloadUnknownKeys:
    """Server middleware before the boundary: a state sealed with an unknown key reloads the keys once."""

    def __init__(self, codec: DerivedKeyCodec) -> None:
        self.codec = codec

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Reload the signing keys when the request's state names a key not loaded here, then go on."""
        wire = ctx.params.get("requestState") if ctx.params is not None else None
        if isinstance(wire, str) and not self.codec.knows(wire):
            await self.codec.engine.load_signing_keys()
        return await call_next(ctx)


def new_nonce() -> str:
    """The one-use mark a fresh state carries."""
    return secrets.token_urlsafe(16)


async def claim(engine: Engine, nonce: str) -> bool:
    """Take a state's nonce; False when it was taken before (a replay). Forgets claims past their window."""
    used = engine.adapter_state(USED_NAMESPACE)
    await used.forget_older_than(int(2 * STATE_TTL_S * 1000))
    return await used.put(nonce, True, only_if_absent=True)
