"""A software WebAuthn authenticator for tests that talk to the host over HTTP without a browser.

It makes real ES256 keys and real signatures in the formats WebAuthn defines (``none`` attestation,
authenticator data, client data), so the host's py_webauthn verification runs as it does for a
browser's passkey; the browser tests use Chromium's virtual authenticator instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import struct
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

_UP_UV = 0x01 | 0x04


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class SoftAuthenticator:
    """One passkey: an ES256 key pair bound to ``origin`` (its host name is the relying party id)."""

    origin: str
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    credential_id: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    count: int = 0

    @property
    def rp_id(self) -> str:
        return self.origin.split("://", 1)[1].rsplit(":", 1)[0]

    def _client(self, type_: str, challenge: str) -> bytes:
        return json.dumps({"type": type_, "challenge": challenge, "origin": self.origin, "crossOrigin": False}).encode()

    def _auth_data(self, flags: int, extra: bytes = b"") -> bytes:
        self.count += 1
        return hashlib.sha256(self.rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", self.count) + extra

    def register(self, options: dict[str, Any]) -> dict[str, Any]:
        """The registration JSON answering creation ``options``."""
        numbers = self.key.public_key().public_numbers()
        cose = {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
        attested = bytes(16) + struct.pack(">H", len(self.credential_id)) + self.credential_id + cbor2.dumps(cose)
        auth_data = self._auth_data(_UP_UV | 0x40, attested)
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        cid = b64url(self.credential_id)
        return {
            "id": cid,
            "rawId": cid,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(self._client("webauthn.create", options["challenge"])),
                "attestationObject": b64url(attestation),
            },
            "clientExtensionResults": {},
        }

    def assert_(self, options: dict[str, Any]) -> dict[str, Any]:
        """The assertion JSON answering request ``options``."""
        client = self._client("webauthn.get", options["challenge"])
        auth_data = self._auth_data(_UP_UV)
        signature = self.key.sign(auth_data + hashlib.sha256(client).digest(), ec.ECDSA(hashes.SHA256()))
        cid = b64url(self.credential_id)
        return {
            "id": cid,
            "rawId": cid,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
            },
            "clientExtensionResults": {},
        }


def header(assertion: dict[str, Any]) -> dict[str, str]:
    """The request header carrying ``assertion``."""
    return {"OpenWOP-Passkey-Assertion": b64url(json.dumps(assertion).encode())}
