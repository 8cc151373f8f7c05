"""``Idempotency-Key`` over v2 (idempotency.md §Layer 1): the same ledger as ``/v1``, v2's rules.

- a key matches ``^[A-Za-z0-9._~-]{22,128}$``; another is ``400 idempotency_key_invalid``
  and nothing is recorded;
- a record is keyed by the credential's tenant, the operation and the key (not
  the principal: two callers of one tenant share a key's record, as the page says);
- ``2xx`` and the non-retryable refusals (``404``, ``409``, ``410``, ``422``) are
  recorded and replayed with ``OpenWOP-Idempotent-Replay: true``; ``400``, ``401``,
  ``403``, ``429`` and ``5xx`` are not, so a retry is handled afresh;
- another request under a used key is ``409 idempotency_key_mismatch``; a retry while
  the first is handled is ``409 idempotency_in_flight`` with ``Retry-After``.
"""

from __future__ import annotations

import re

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.host.http.idempotency import Rules

#: idempotency.md §Layer 1 "Grammar".
KEY_PATTERN = re.compile(r"[A-Za-z0-9._~-]{22,128}")


class IdempotencyKeyInvalidError(BridgeError, code="idempotency_key_invalid", status=400):
    """400: an ``Idempotency-Key`` outside v2's grammar."""


def _invalid() -> BridgeError:
    return IdempotencyKeyInvalidError(
        "Idempotency-Key must be 22 to 128 characters of A-Z a-z 0-9 . _ ~ - (a UUIDv4 will do)",
        details={"pattern": "^" + KEY_PATTERN.pattern + "$"},
    )


RULES = Rules(KEY_PATTERN, _invalid, per_principal=False, final_refusals=frozenset({404, 409, 410, 422}))
