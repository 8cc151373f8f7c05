"""The v2 Subject (``subject.schema.json``) of an API-key principal (identity.md §2.2)."""

from __future__ import annotations

from typing import Any

#: The trust root of the API-key lane.
API_KEY_ISSUER = "urn:openwop-bridge:api-key"
_SUBJECT_ID_CHARS = str.maketrans({" ": "_", "/": "_", "\t": "_", "\n": "_"})


def subject(tenant: str, principal_id: str) -> dict[str, Any]:
    """The v2 Subject of an API-key principal."""
    return {
        "issuer": API_KEY_ISSUER,
        "subjectId": (principal_id or "anonymous").translate(_SUBJECT_ID_CHARS)[:256],
        "tenant": tenant,
        "lane": "api-key",
        "kind": "user",
    }
