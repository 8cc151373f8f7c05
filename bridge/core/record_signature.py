"""Signatures of decision records: Ed25519 (RFC 8032) over a record's JCS form, keys published as a JWK set.

The signed bytes are a record's JCS form (:func:`openwop_bridge.core.decision_record.canonical`), the
very bytes its hash is taken over, as the W3C Data Integrity ``eddsa-jcs-2022`` suite signs JCS. A
record's export line carries the signature (base64url, no padding) and the id of the key that made it
(``kid``, the key's RFC 7638 thumbprint). The host's public keys are a JWK set (``GET /v1/audit/keys``,
``kty`` ``OKP``, ``crv`` ``Ed25519``), so any Ed25519 implementation checks a record with them.

Signing keys are made from 32-byte seeds (:class:`RecordKey`): the same seed gives the same key and
``kid`` on every instance.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, OKPKey

__all__ = ["ALG", "RecordKey", "SignatureError", "key_set", "verify"]

#: The signature algorithm, as a JWK names it (RFC 9864's fully specified name for EdDSA over Ed25519).
ALG = "Ed25519"


class SignatureError(ValueError):
    """A record's signature does not hold (malformed, unknown key, or not made over this record)."""


@dataclass(frozen=True, slots=True)
class RecordKey:
    """An Ed25519 signing key, from a 32-byte seed; ``kid`` is its RFC 7638 thumbprint."""

    private: Ed25519PrivateKey
    kid: str
    jwk: OKPKey

    @classmethod
    def from_seed(cls, seed: bytes) -> RecordKey:
        """The key whose private part is ``seed`` (32 bytes)."""
        private = Ed25519PrivateKey.from_private_bytes(seed)
        jwk = OKPKey.import_key(private)
        return cls(private, str(jwk.thumbprint()), jwk)

    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK, with its ``kid``, ``alg`` and ``use``."""
        found: dict[str, Any] = dict(self.jwk.as_dict(private=False))
        found.update(kid=self.kid, alg=ALG, use="sig")
        return found

    def sign(self, payload: bytes) -> str:
        """The signature over ``payload``, base64url without padding."""
        return base64.urlsafe_b64encode(self.private.sign(payload)).rstrip(b"=").decode("ascii")


def key_set(jwks: Mapping[str, Any]) -> dict[str, Ed25519PublicKey]:
    """The Ed25519 public keys of a JWK set document (``{"keys": [...]}``), by ``kid``; others are left out."""
    keys: dict[str, Ed25519PublicKey] = {}
    try:
        found = KeySet.import_key_set(dict(jwks))  # type: ignore[arg-type]
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise SignatureError(f"not a JWK set: {exc}") from None
    for key in found.keys:
        if isinstance(key, OKPKey) and key.get("crv") == "Ed25519" and key.kid:
            public = key.public_key
            if isinstance(public, Ed25519PublicKey):
                keys[key.kid] = public
    return keys


def verify(kid: str, signature: str, payload: bytes, keys: Mapping[str, Ed25519PublicKey]) -> None:
    """Check ``signature`` (base64url) over ``payload`` with the key ``kid``; else :class:`SignatureError`."""
    key = keys.get(kid)
    if key is None:
        raise SignatureError(f"signed by key {kid!r}, which the key set does not hold")
    try:
        raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    except (binascii.Error, ValueError):
        raise SignatureError("the signature is not base64url") from None
    try:
        key.verify(raw, payload)
    except InvalidSignature:
        raise SignatureError(f"the signature by key {kid!r} does not match the record") from None
