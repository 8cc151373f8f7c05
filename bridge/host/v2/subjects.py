"""The v2 Subject (``subject.schema.json``) of a run's owner or a decision's maker (identity.md §1, §2.2).

A run or decision records ``{issuer, subjectId, lane}`` when its credential named a subject (a provider's
token, a Slack click, a signed link: :func:`openwop_bridge.core.auth.subject_ref`); :func:`recorded` spells
that as a Subject. One made with an API key records only the principal id: :func:`subject` spells it in the
key realm. A decision someone made in another's place (a delegate, an operator acting as someone) is the other's,
with the one who acted as its ``actor`` (:func:`actor`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openwop_bridge.core.auth import API_KEY_ISSUER, LANES

__all__ = ["API_KEY_ISSUER", "of", "recorded", "subject"]
_SUBJECT_ID_CHARS = str.maketrans({" ": "_", "/": "_", "\t": "_", "\n": "_"})


def _subject_id(value: str) -> str:
    return (value or "anonymous").translate(_SUBJECT_ID_CHARS)[:256]


def subject(tenant: str, principal_id: str) -> dict[str, Any]:
    """The v2 Subject of an API-key principal."""
    return {
        "issuer": API_KEY_ISSUER,
        "subjectId": _subject_id(principal_id),
        "tenant": tenant,
        "lane": "api-key",
        "kind": "user",
    }


def recorded(tenant: str, ref: Any) -> dict[str, Any] | None:
    """The v2 Subject of a recorded ``{issuer, subjectId, lane}``, or None when ``ref`` is not one."""
    if not isinstance(ref, Mapping):
        return None
    issuer, subject_id, lane = ref.get("issuer"), ref.get("subjectId"), ref.get("lane")
    if not (isinstance(issuer, str) and issuer and isinstance(subject_id, str) and lane in LANES):
        return None
    return {
        "issuer": "".join(issuer.split())[:1024],
        "subjectId": _subject_id(subject_id),
        "tenant": tenant,
        "lane": lane,
        "kind": "user",
    }


def of(tenant: str, principal_id: str, ref: Any = None, actor: dict[str, Any] | None = None) -> dict[str, Any]:
    """The recorded subject (:func:`recorded`) when there is one, else the API-key subject of ``principal_id``;
    with ``actor`` (:func:`actor`) when someone acted on its behalf."""
    out = recorded(tenant, ref) or subject(tenant, principal_id)
    if actor is not None:
        out["actor"] = actor
    return out


def actor(tenant: str, principal_id: str, decision: Any) -> dict[str, Any] | None:
    """The Subject of whoever acted on ``principal_id``'s behalf in a recorded decision (a vote, a resolution):
    its ``actingPrincipal`` (a delegate, an operator acting as someone) with the ``actingSubject`` their
    credential named, else the API-key subject. None when ``principal_id`` acted themselves. One level deep:
    the bridge records no chain, so the nested Subject has no ``actor`` of its own (the schema allows four)."""
    if not isinstance(decision, Mapping):
        return None
    acting = decision.get("actingPrincipal")
    if not isinstance(acting, str) or not acting or acting == principal_id:
        return None
    return of(tenant, acting, decision.get("actingSubject"))
