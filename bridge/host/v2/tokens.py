"""Signed links in the v2 grammar: ``ow2.<alg>.<kid>.<payload>.<mac>``.

A v1 link is ``<payload>.<mac>`` (``openwop_bridge.core.tokens``), its ``kid`` inside the
signed payload. The v2 spelling puts ``ow2``, the algorithm (``hs256``, the one
advertised in ``interrupt.tokenAlgs``) and the key id in front of the very same
two segments, so both spellings verify with the same secrets and name the same
interrupt. A v2 token whose ``alg`` is not advertised, whose ``kid`` this host
does not hold, or whose outer ``kid`` differs from the signed one is ``401
interrupt_token_invalid``. A token without the ``ow2.`` prefix is a v1 link and
is verified as one (the ``legacy`` kid of the v2 text).
"""

from __future__ import annotations

import base64
import json
import re

from openwop_bridge.core.errors import BridgeError

PREFIX = "ow2"
ALGS = ("hs256",)
LEGACY_KID = "legacy"
_KID = re.compile(r"[A-Za-z0-9_~-]{1,128}")


class InterruptTokenInvalidError(BridgeError, code="interrupt_token_invalid", status=401):
    """401: the token's MAC, ``alg`` or ``kid`` is not accepted."""


def signed_kid(v1_token: str) -> str | None:
    """The ``kid`` inside a v1 token's payload, or None when it cannot be read."""
    head = v1_token.partition(".")[0]
    try:
        claims = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, json.JSONDecodeError):
        return None
    kid = claims.get("kid") if isinstance(claims, dict) else None
    return kid if isinstance(kid, str) else None


def to_v2(v1_token: str) -> str:
    """The v2 spelling of a token the engine minted."""
    kid = signed_kid(v1_token) or LEGACY_KID
    return f"{PREFIX}.{ALGS[0]}.{kid}.{v1_token}"


def to_engine(token: str, kids: list[str]) -> str:
    """The engine's spelling of a presented token (v2 or v1), or 401 for a v2 token not accepted."""
    if not token.startswith(PREFIX + "."):
        return token  # a v1 link: verified as such (kid ``legacy``)
    parts = token.split(".")
    if len(parts) != 5:
        raise InterruptTokenInvalidError("the token does not follow ow2.<alg>.<kid>.<payload>.<mac>")
    _, alg, kid, payload, mac = parts
    if alg not in ALGS:
        raise InterruptTokenInvalidError(f"token algorithm {alg!r} is not accepted", details={"tokenAlgs": list(ALGS)})
    if not _KID.fullmatch(kid) or kid not in kids:
        raise InterruptTokenInvalidError("the token's key id is not held by this host")
    inner = f"{payload}.{mac}"
    if signed_kid(inner) != kid:
        raise InterruptTokenInvalidError("the token's key id does not match its signed payload")
    return inner
