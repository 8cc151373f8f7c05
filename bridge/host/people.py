"""One person on every channel: the notify file's people who name their identity at a provider.

A person of the notify file may say who they are at an identity provider of the identity file
(``people.alice.subject: {"issuer": …, "subjectId": …}``). :func:`person_subjects` turns those into the
``(issuer, sub) → principal id`` map the token verifier resolves with
(:class:`~openwop_bridge.identity.verifier.TokenVerifier`'s ``people``), so that the provider's token
for that person is the same principal as their Slack click and their e-mailed link: one voter on a
quorum, one recipient, one name in the audit. The host builds it because the identity layer sits
below the notify layer and never reads the notify file.
"""

from __future__ import annotations

from openwop_bridge.identity.config import IdentityConfig
from openwop_bridge.notify.config import NotifyConfig, NotifyConfigError

__all__ = ["person_subjects"]


def person_subjects(
    notify: NotifyConfig | None, identity: IdentityConfig | None, *, path: str | None = None
) -> dict[tuple[str, str], str]:
    """``(issuer, subjectId) → principal id`` of every person naming a ``subject``.

    Raises :class:`~openwop_bridge.notify.config.NotifyConfigError` (one line naming the field, and the
    notify file at ``path``) for a subject whose issuer the identity file does not name, or when there is
    no identity file at all.
    """
    found: dict[tuple[str, str], str] = {}
    if notify is None:
        return found
    issuers = {i.issuer for i in identity.issuers} if identity is not None else set()
    for pid, person in notify.people.items():
        if person.subject is None:
            continue
        issuer = person.subject.issuer
        if issuer not in issuers:
            where = "the identity file names no such issuer" if identity is not None else "no identity file is given"
            prefix = f"notify file {path!r}: " if path else ""
            raise NotifyConfigError(f"{prefix}people.{pid}.subject.issuer: {issuer!r}: {where} (--identity-config)")
        found[(issuer, person.subject.subject_id)] = pid
    return found
