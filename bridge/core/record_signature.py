"""Signatures of decision records: a JWS with a detached payload (RFC 7515 Appendix F), alg ``Ed25519``.

The payload is a record's JCS form (:func:`openwop_bridge.core.decision_record.canonical`); the
signature is the JWS compact serialisation with its payload part left empty
(``<protected header>..<signature>``), the header naming the key (``kid``). Any JOSE library verifies
it by putting the payload back; the host's public keys are a JWK set (``GET /v1/audit/keys``).

Signing keys are Ed25519 keys made from 32-byte seeds (:class:`RecordKey`); a key's id is its RFC 7638
thumbprint, so the same seed gives the same ``kid`` on every instance.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, OKPKey

__all__ = ["ALG", "RecordKey", "SignatureError", "key_set", "verify"]

#: The JWS algorithm (RFC 9864's fully specified name for EdDSA over Ed25519).
ALG = "Ed25519"


class SignatureError(ValueError):
    """A record's signature does not hold (malformed, unknown key, or not made over this record)."""


@dataclass(frozen=True, slots=True)
class RecordKey:
    """An Ed25519 signing key, from a 32-byte seed."""

    key: OKPKey

    @classmethod
    def from_seed(cls, seed: bytes) -> RecordKey:
        """The key whose private part is ``seed`` (32 bytes)."""
        return cls(OKPKey.import_key(Ed25519PrivateKey.from_private_bytes(seed)))

    @property
    def kid(self) -> str:
        """The key's id: its RFC 7638 thumbprint."""
        return str(self.key.thumbprint())

    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK, with its ``kid``, ``alg`` and ``use``."""
        jwk: dict[str, Any] = dict(self.key.as_dict(private=False))
        jwk.update(kid=self.kid, alg=ALG, use="sig")
        return jwk

    def sign(self, payload: bytes) -> str:
        """The detached JWS over ``payload``."""
        token = jws.serialize_compact({"alg": ALG, "kid": self.kid}, payload, self.key, algorithms=[ALG])
        return jws.detach_content(token)


def key_set(jwks: Mapping[str, Any]) -> dict[str, OKPKey]:
    """The Ed25519 keys of a JWK set document (``{"keys": [...]}``), by ``kid``; others are left out."""
    keys: dict[str, OKPKey] = {}
    try:
        found = KeySet.import_key_set(dict(jwks))  # type: ignore[arg-type]
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise SignatureError(f"not a JWK set: {exc}") from None
    for key in found.keys:
        if isinstance(key, OKPKey) and key.get("crv") == "Ed25519" and key.kid:
            keys[key.kid] = key
    return keys


def verify(signature: str, payload: bytes, keys: Mapping[str, OKPKey]) -> str:
    """Check ``signature`` over ``payload`` with the key it names; its ``kid``, else :class:`SignatureError`."""
    head, dot, rest = signature.partition(".")
    empty, dot2, sig = rest.partition(".")
    if not (dot and dot2 and head and sig) or empty:
        raise SignatureError("not a detached JWS (header..signature)")
    body = base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")
    try:
        header = jws.extract_compact(f"{head}.{body}.{sig}".encode("ascii")).headers()
    except (JoseError, ValueError, UnicodeError) as exc:
        raise SignatureError(f"malformed signature: {exc}") from None
    kid = header.get("kid")
    if header.get("alg") != ALG or not isinstance(kid, str):
        raise SignatureError(f"signature header must name alg {ALG} and a kid")
    key = keys.get(kid)
    if key is None:
        raise SignatureError(f"signed by key {kid!r}, which the key set does not hold")
    try:
        jws.deserialize_compact(f"{head}.{body}.{sig}", key, algorithms=[ALG])
    except (JoseError, ValueError) as exc:
        raise SignatureError(f"signature by key {kid!r} does not match the record ({exc})") from None
    return kid
