"""Checking an ``InterruptPayload`` of any kind and returning it in canonical field names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openwop_bridge.core.errors import ValidationError
from openwop_bridge.core.kinds.registry import kind_of
from openwop_bridge.core.kinds.schema import compile_schema, definition_errors

_ALIASES = {"reason": "kind", "resumeKey": "key", "answerSchema": "resumeSchema"}
_TOP_LEVEL = {"kind", "key", "data", "resumeSchema", "timeoutMs"}


def payload_key(payload: Mapping[str, Any], default_key: str) -> Any:
    """The key a payload names (``key`` or its alias ``resumeKey``), without checking the rest."""
    for name, canonical in ((n, _ALIASES.get(n, n)) for n in payload):
        if canonical == "key":
            return payload[name]
    return default_key


def normalize_payload(payload: Mapping[str, Any], default_key: str) -> dict[str, Any]:
    """Check an ``InterruptPayload`` and return it in canonical field names.

    Accepts the ``suspend`` aliases (``reason``, ``resumeKey``, ``answerSchema``)
    and fills ``key`` when absent. The result validates against
    ``suspend-request.schema.json``.
    """
    out: dict[str, Any] = {}
    for name, value in payload.items():
        canonical = _ALIASES.get(name, name)
        if canonical in out:
            raise ValidationError(f"interrupt payload sets both {name!r} and {canonical!r}")
        out[canonical] = value
    unknown = set(out) - _TOP_LEVEL
    if unknown:
        raise ValidationError(f"interrupt payload has unknown field(s): {', '.join(sorted(unknown))}")
    out.setdefault("key", default_key)
    out.setdefault("data", {})
    kind = kind_of(out.get("kind"))
    problems = []
    key = out["key"]
    if not isinstance(key, str) or not 1 <= len(key) <= 256:
        problems.append("key: must be a string of 1 to 256 characters")
    timeout = out.get("timeoutMs")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0):
        problems.append("timeoutMs: must be a non-negative integer")
    if "resumeSchema" in out and not isinstance(out["resumeSchema"], dict):
        problems.append("resumeSchema: must be a JSON Schema object")
    problems += definition_errors("suspend-request.schema.json", kind.data_def, out["data"], "data")
    if not problems:
        problems += kind.data_problems(out["data"])
    if problems:
        raise ValidationError(f"invalid {kind.name} interrupt payload", details={"problems": problems})
    if "resumeSchema" in out:
        compile_schema(out["resumeSchema"])
    return out
