"""How strongly an answer is bound to the person giving it: ``bearer`` or ``key-bound``.

An approval gate says ``"assurance": "key-bound"`` in its ``data`` (``bearer``, the default, is
what every answer has: whoever holds the credential or the link). A key-bound gate takes only an
answer whose person's authenticator signed exactly what it decides: the host verifies a passkey
assertion over the interrupt, the action and the resume value before it builds the
:class:`~openwop_bridge.core.decisions.common.Answer`, which then carries ``assurance="key-bound"``.
Anything less is refused with ``sender_constraint_missing`` and nothing is recorded. The decision
records the assurance actually used in the vote, the resolution and the audit entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openwop_bridge.core.errors import SenderConstraintMissingError

__all__ = ["BEARER", "FIELD", "KEY_BOUND", "LEVELS", "data_problem", "require", "required"]

#: The approval ``data`` field naming the gate's floor.
FIELD = "assurance"
#: A credential alone (an API key, a token, a session, a signed link).
BEARER = "bearer"
#: A passkey assertion over the decision itself.
KEY_BOUND = "key-bound"
#: The levels a gate may ask for, weakest first.
LEVELS = (BEARER, KEY_BOUND)


def required(data: Mapping[str, Any]) -> str:
    """The assurance a gate's ``data`` asks for (``bearer`` unless it says otherwise)."""
    value = data.get(FIELD)
    return value if isinstance(value, str) and value in LEVELS else BEARER


def data_problem(data: Mapping[str, Any]) -> str | None:
    """Why the gate's ``assurance`` field is not valid, if it is not."""
    if FIELD in data and data[FIELD] not in LEVELS:
        return 'data.assurance: must be "bearer" or "key-bound"'
    return None


def require(data: Mapping[str, Any], used: str) -> None:
    """Refuse (``sender_constraint_missing``) an answer whose assurance is below the gate's."""
    if required(data) == KEY_BOUND and used != KEY_BOUND:
        raise SenderConstraintMissingError(
            "this gate takes only a passkey-confirmed decision: confirm it with your passkey in the inbox "
            "or on the link's page",
            details={"requiredAssurance": KEY_BOUND, "assurance": used},
        )
