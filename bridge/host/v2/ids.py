"""Tenant-bound ids over v2: ``<tenant>/<opaque>``, one path segment on the wire.

The engine mints ids as ``<prefix>_<ULID>`` (``run_01J…``, ``evt_01J…``). The v2
grammar (``ids.schema.json``) admits ``[A-Za-z0-9._~-]`` in the opaque segment, no
``_``, so over v2 the engine's ``_`` is spelled ``-``: ``run_01J…`` is
``<tenant>/run-01J…`` in v2 bodies and ``<tenant>~2Frun-01J…`` in v2 paths. The
engine never mints a ``-`` in those ids, so the mapping is one-to-one and goes
back exactly. A v2 path parameter may be projected (``acme~2Frun-…``),
percent-encoded (``acme%2Frun-…``), or bare (the opaque segment alone, or the v1
id as ``/v1/runs`` hands it out): a bare id resolves under the caller's tenant.
"""

from __future__ import annotations

import re

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import BridgeError, ValidationError

_PASSTHROUGH = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_ESCAPE = re.compile(r"[~%]([0-9A-Fa-f]{2})")
_MALFORMED_TILDE = re.compile(r"~(?![0-9A-Fa-f]{2})")
_ENGINE_ID = re.compile(r"([a-z]+)_([0-9A-Za-z]{26})")
_V2_OPAQUE = re.compile(r"([a-z]+)-([0-9A-Za-z]{26})")
_TENANT = re.compile(r"(anon:)?[A-Za-z0-9._~-]{1,128}")
_OPAQUE = re.compile(r"[A-Za-z0-9._~-]{16,128}")
_BARE_V1 = re.compile(r"[A-Za-z0-9._~-]{1,128}")


class IdTenantMismatchError(BridgeError, code="id_tenant_mismatch", status=403):
    """403: a tenant-bound id names another tenant than the caller's."""


def opaque(engine_id: str) -> str:
    """The v2 opaque segment of an engine id (``run_01J…`` → ``run-01J…``)."""
    m = _ENGINE_ID.fullmatch(engine_id)
    return f"{m.group(1)}-{m.group(2)}" if m else engine_id


def engine_id(opaque_segment: str) -> str:
    """The engine id of a v2 opaque segment (``run-01J…`` → ``run_01J…``)."""
    m = _V2_OPAQUE.fullmatch(opaque_segment)
    return f"{m.group(1)}_{m.group(2)}" if m else opaque_segment


def bind(tenant: str, engine_run_id: str) -> str:
    """The v2 tenant-bound id of an engine id: ``<tenant>/<opaque>``."""
    return f"{tenant}/{opaque(engine_run_id)}"


def project(bound: str) -> str:
    """One path segment: every byte outside ``[A-Za-z0-9._-]`` becomes ``~XX``."""
    return "".join(chr(b) if b in _PASSTHROUGH else f"~{b:02X}" for b in bound.encode("utf-8"))


def unproject(wire: str) -> str:
    """Decode ``~XX`` and ``%XX`` escapes (either spelling) back to the bound form.

    The projection escapes ``~`` itself, so a ``~`` not followed by two hex digits is malformed (400).
    """
    if _MALFORMED_TILDE.search(wire):
        raise ValidationError("a '~' in a path id must introduce two hex digits", details={"id": wire[:300]})
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(wire):
        out += wire[pos : m.start()].encode("utf-8")
        out.append(int(m.group(1), 16))
        pos = m.end()
    out += wire[pos:].encode("utf-8")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError("the id is not valid UTF-8 once decoded") from exc


def split(bound: str) -> tuple[str, str]:
    """``(tenant, opaque)`` of a bound id, or 400 when it does not follow the grammar."""
    tenant, sep, rest = bound.partition("/")
    if not sep or not _TENANT.fullmatch(tenant) or not _OPAQUE.fullmatch(rest):
        raise ValidationError("a tenant-bound id is <tenant>/<opaque>", details={"id": bound[:300]})
    return tenant, rest


def resolve_param(wire: str, principal: Principal) -> str:
    """The engine id a v2 path parameter names, for ``principal``.

    A bound id must name the caller's tenant (403 ``id_tenant_mismatch``); a
    bare id resolves under the caller's tenant (the run is then looked up there).
    """
    return resolve_bound(unproject(wire), principal)


def resolve_bound(decoded: str, principal: Principal) -> str:
    """The engine id a decoded run id (bound, or a bare v1 id) names for ``principal``, as :func:`resolve_param`."""
    if "/" not in decoded:
        if not _BARE_V1.fullmatch(decoded.replace("_", "-")):
            raise ValidationError("not a run id", details={"id": decoded[:300]})
        return engine_id(decoded)
    tenant, rest = split(decoded)
    if principal.tenant not in (tenant, "*"):
        raise IdTenantMismatchError(
            "this id belongs to another tenant", details={"tenant": tenant, "callerTenant": principal.tenant}
        )
    return engine_id(rest)
