"""Passkeys: people's WebAuthn credentials, and the assertions that confirm a decision with one.

A person registers passkeys from the inbox (:mod:`openwop_bridge.host.web.passkeys`); each is kept
in the engine's key-value space under the principal it was registered by (namespace
:data:`NAMESPACE`, at most :data:`MAX_PER_PERSON` each). The relying party is this host: its id is
the host name of the public URL (else of the request), and the origin the public URL's (else the
request's) scheme, host and port.

A decision on a key-bound gate (:mod:`openwop_bridge.core.assurance`) travels with an assertion.
Its challenge is issued here for one interrupt, one answering person and one resume value: the
SHA-256 of the canonical JSON of ``{purpose, interruptId, action, resumeValueSha256, nonce}``
(:func:`decision_challenge`), where ``resumeValueSha256`` is the hash of the resume value's
canonical JSON (keys sorted, no whitespace, UTF-8) and ``nonce`` 16 random bytes. The challenge is
kept (namespace :data:`CHALLENGES`, at most :data:`MAX_CHALLENGES` open per person, for
:data:`CHALLENGE_TTL_MS`) and taken out when an assertion presents it, so it answers once. The
assertion is verified (py_webauthn) against the challenge computed again from the request's own
interrupt and resume value: an assertion made for another action, value or interrupt does not
verify, nor one of someone else's passkey. Every refusal is ``sender_constraint_missing``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import webauthn
from starlette.requests import Request
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import InvalidAuthenticationResponse, InvalidRegistrationResponse
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from openwop_bridge.core import approvals
from openwop_bridge.core.assurance import BEARER, KEY_BOUND
from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import ConflictError, RateLimitedError, SenderConstraintMissingError, ValidationError
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.host.http.deps import base_url
from openwop_bridge.runtime.engine import Engine

__all__ = [
    "CHALLENGES",
    "CHALLENGE_TTL_MS",
    "HEADER",
    "MAX_CHALLENGES",
    "MAX_PER_PERSON",
    "NAMESPACE",
    "Passkeys",
    "RelyingParty",
    "assurance_of",
    "canonical_json",
    "decision_challenge",
    "passkeys_of",
]

#: The key-value namespace of the registered passkeys.
NAMESPACE = "ui.passkey"
#: The namespace of the challenges issued and not yet answered (registrations and decisions).
CHALLENGES = "ui.passkey.challenge"
#: The most passkeys one principal registers.
MAX_PER_PERSON = 10
#: The most challenges one principal holds open at once.
MAX_CHALLENGES = 20
#: How long a challenge may be answered.
CHALLENGE_TTL_MS = 300_000
#: The request header carrying a decision's assertion: base64url of the assertion's JSON.
HEADER = "OpenWOP-Passkey-Assertion"
#: The longest assertion header read.
MAX_ASSERTION = 8192
_PURPOSE = "openwop-decision"


def canonical_json(value: Any) -> bytes:
    """The canonical JSON of ``value``: keys sorted, no whitespace, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def decision_challenge(interrupt_id: str, value: Any, nonce: bytes) -> bytes:
    """The WebAuthn challenge binding a decision: interrupt, action and the resume value's hash."""
    binding = {
        "purpose": _PURPOSE,
        "interruptId": interrupt_id,
        "action": approvals.action_of(value),
        "resumeValueSha256": hashlib.sha256(canonical_json(value)).hexdigest(),
        "nonce": bytes_to_base64url(nonce),
    }
    return hashlib.sha256(canonical_json(binding)).digest()


def _person(principal_id: str) -> str:
    return hashlib.sha256(principal_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class RelyingParty:
    """This host as a WebAuthn relying party: its id (a host name) and its origin."""

    id: str
    origin: str

    @classmethod
    def of(cls, base_url: str) -> RelyingParty:
        """The relying party of a base URL (the public URL, else the request's)."""
        parts = urlsplit(base_url)
        return cls(id=parts.hostname or "", origin=f"{parts.scheme}://{parts.netloc}")


def _refused(why: str) -> SenderConstraintMissingError:
    return SenderConstraintMissingError(why, details={"requiredAssurance": "key-bound"})


class Passkeys:
    """The passkeys and challenges of one host, in its engine's store (see the module's docstring)."""

    def __init__(self, engine: Engine) -> None:
        self._keys = engine.adapter_state(NAMESPACE)
        self._challenges = engine.adapter_state(CHALLENGES)
        self._clock = engine.clock

    async def list(self, principal_id: str) -> list[dict[str, Any]]:
        """The passkeys registered by ``principal_id``."""
        person = _person(principal_id)
        rows = await self._keys.scan(f"{person}.", limit=MAX_PER_PERSON)
        return [value for _, value in rows if isinstance(value, dict)]

    async def _challenge(self, record: dict[str, Any], challenge: bytes) -> None:
        key = bytes_to_base64url(challenge)
        record = {**record, "issuedMs": self._clock.now_ms()}
        if await self._challenges.put_capped(key, record, field="person", cap=MAX_CHALLENGES):
            return
        await self._challenges.forget_older_than(CHALLENGE_TTL_MS)
        if not await self._challenges.put_capped(key, record, field="person", cap=MAX_CHALLENGES):
            raise RateLimitedError(
                f"{MAX_CHALLENGES} passkey requests are already waiting: finish one, or wait a few minutes",
                CHALLENGE_TTL_MS // 1000,
            )

    async def _take(self, challenge: str, person: str, purpose: str) -> dict[str, Any] | None:
        """The challenge's record, taken out so it answers once; None if unknown, used, stale or someone else's."""
        record = await self._challenges.get(challenge)
        if not isinstance(record, dict) or not await self._challenges.forget_if(challenge, record):
            return None
        if record.get("person") != person or record.get("purpose") != purpose:
            return None
        if self._clock.now_ms() - int(record.get("issuedMs", 0)) > CHALLENGE_TTL_MS:
            return None
        return record

    async def registration_options(self, principal: Principal, rp: RelyingParty) -> str:
        """WebAuthn creation options (JSON) for a new passkey of ``principal``."""
        known = await self.list(principal.id)
        if len(known) >= MAX_PER_PERSON:
            raise ConflictError(f"you have {MAX_PER_PERSON} passkeys already: remove one first")
        person = _person(principal.id)
        challenge = secrets.token_bytes(32)
        await self._challenge({"person": person, "purpose": "register"}, challenge)
        subject = principal.subject
        options = webauthn.generate_registration_options(
            rp_id=rp.id,
            rp_name="openwop-bridge",
            user_id=bytes.fromhex(person),
            user_name=(subject.email if subject and subject.email else None) or principal.id,
            user_display_name=(subject.name if subject and subject.name else None) or principal.id,
            challenge=challenge,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.PREFERRED,
                user_verification=UserVerificationRequirement.REQUIRED,
            ),
            exclude_credentials=[
                PublicKeyCredentialDescriptor(id=base64url_to_bytes(k["credentialId"])) for k in known
            ],
        )
        return webauthn.options_to_json(options)

    async def register(self, principal: Principal, credential: Mapping[str, Any], rp: RelyingParty) -> dict[str, Any]:
        """Verify a registration answering one of this principal's challenges, and keep the passkey."""
        person = _person(principal.id)
        challenge = _client_challenge(credential)
        if challenge is None or await self._take(challenge, person, "register") is None:
            raise ValidationError("this passkey registration does not answer a current request: start again")
        try:
            verified = webauthn.verify_registration_response(
                credential=dict(credential),
                expected_challenge=base64url_to_bytes(challenge),
                expected_rp_id=rp.id,
                expected_origin=rp.origin,
                require_user_verification=True,
            )
        except (InvalidRegistrationResponse, ValueError, KeyError, TypeError) as exc:
            raise ValidationError(f"the passkey registration did not verify: {exc}") from exc
        credential_id = bytes_to_base64url(verified.credential_id)
        record = {
            "person": person,
            "principal": principal.id,
            "credentialId": credential_id,
            "publicKey": bytes_to_base64url(verified.credential_public_key),
            "signCount": verified.sign_count,
            "createdMs": self._clock.now_ms(),
        }
        if not await self._keys.put_capped(f"{person}.{credential_id}", record, field="person", cap=MAX_PER_PERSON):
            raise ConflictError(f"this passkey is registered already, or you have {MAX_PER_PERSON} passkeys")
        return record

    async def decision_options(self, principal_id: str, interrupt_id: str, value: Any, rp: RelyingParty) -> str:
        """WebAuthn request options (JSON) whose challenge binds this decision, for ``principal_id``'s passkeys."""
        known = await self.list(principal_id)
        if not known:
            raise _refused(f"{principal_id!r} has no passkey: register one in the inbox first")
        nonce = secrets.token_bytes(16)
        challenge = decision_challenge(interrupt_id, value, nonce)
        record = {
            "person": _person(principal_id),
            "purpose": "decide",
            "interruptId": interrupt_id,
            "nonce": bytes_to_base64url(nonce),
        }
        await self._challenge(record, challenge)
        options = webauthn.generate_authentication_options(
            rp_id=rp.id,
            challenge=challenge,
            allow_credentials=[PublicKeyCredentialDescriptor(id=base64url_to_bytes(k["credentialId"])) for k in known],
            user_verification=UserVerificationRequirement.REQUIRED,
        )
        return webauthn.options_to_json(options)

    async def confirm(self, principal_id: str, interrupt_id: str, value: Any, header: str, rp: RelyingParty) -> None:
        """Verify the assertion of ``header`` for this decision by ``principal_id``; raise ``sender_constraint_missing``
        unless it is valid (its challenge is used up either way)."""
        credential = _assertion(header)
        challenge = _client_challenge(credential)
        person = _person(principal_id)
        record = None if challenge is None else await self._take(challenge, person, "decide")
        if record is None or record.get("interruptId") != interrupt_id:
            raise _refused("the passkey assertion does not answer a current request for this decision")
        credential_id = credential.get("id")
        stored = await self._keys.get(f"{person}.{credential_id}") if isinstance(credential_id, str) else None
        if not isinstance(stored, dict):
            raise _refused(f"the passkey is not one of {principal_id!r}'s")
        try:
            verified = webauthn.verify_authentication_response(
                credential=credential,
                expected_challenge=decision_challenge(interrupt_id, value, base64url_to_bytes(record["nonce"])),
                expected_rp_id=rp.id,
                expected_origin=rp.origin,
                credential_public_key=base64url_to_bytes(stored["publicKey"]),
                credential_current_sign_count=int(stored["signCount"]),
                require_user_verification=True,
            )
        except (InvalidAuthenticationResponse, ValueError, KeyError, TypeError) as exc:
            raise _refused(f"the passkey assertion does not confirm this decision: {exc}") from exc
        await self._keys.replace(f"{person}.{credential_id}", stored, {**stored, "signCount": verified.new_sign_count})


def _assertion(header: str) -> dict[str, Any]:
    """The assertion JSON carried by the header (base64url, bounded)."""
    if len(header) > MAX_ASSERTION:
        raise _refused(f"the {HEADER} header is longer than {MAX_ASSERTION} characters")
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise _refused(f"the {HEADER} header is not base64url of a JSON assertion") from exc
    if not isinstance(decoded, dict):
        raise _refused(f"the {HEADER} header is not base64url of a JSON assertion")
    return decoded


def _client_challenge(credential: Mapping[str, Any]) -> str | None:
    """The challenge the browser signed, read from the credential's client data (None if unreadable)."""
    response = credential.get("response")
    if not isinstance(response, Mapping) or not isinstance(response.get("clientDataJSON"), str):
        return None
    try:
        client = json.loads(base64url_to_bytes(response["clientDataJSON"]))
    except (binascii.Error, ValueError):
        return None
    challenge = client.get("challenge") if isinstance(client, dict) else None
    return challenge if isinstance(challenge, str) and len(challenge) <= 128 else None


def passkeys_of(request: Request) -> Passkeys:
    """The host's :class:`Passkeys`, made on first use over the app's engine."""
    state = request.app.state
    found: Passkeys | None = getattr(state, "passkeys", None)
    if found is None:
        found = state.passkeys = Passkeys(request.app.state.engine)
    return found


async def assurance_of(request: Request, answerer: str | None, record: InterruptRecord, value: Any) -> str:
    """``key-bound`` when the request carries a passkey assertion confirming this answer by ``answerer``
    (refused with ``sender_constraint_missing`` if it does not verify); ``bearer`` when it carries none."""
    header = request.headers.get(HEADER)
    if header is None:
        return BEARER
    if not answerer:
        raise _refused("this answer names no one whose passkey could confirm it")
    rp = RelyingParty.of(base_url(request))
    await passkeys_of(request).confirm(answerer, record.interrupt_id, value, header, rp)
    return KEY_BOUND
