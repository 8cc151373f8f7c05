"""The closed v2 ``RunSnapshot`` (``run-snapshot.schema.json``; runs.md §Snapshot).

The v2 snapshot is a closed object: host-specific state goes under ``extensions``,
keyed ``<org>.<name>``. The engine's snapshot carries more than the schema names
(the open interrupts with their links, a finished run's outputs, a parent's child
runs); over v2 those move, unchanged, under ``extensions["openwop-bridge.run"]``.
``parentRunId`` is the fork source when the run is a fork (the schema's meaning),
else the sub-workflow parent.

Two fields stay at the root though the schema does not name them: ``interrupt`` (the
first open interrupt, with its ``ow2`` link) and ``parentNodeId``. The v2 reference
SDK (``openwop-client`` 2.7) types both on its ``RunSnapshot`` and reads them there,
so a client finds the link where its SDK looks; the v2 OpenAPI document names them.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.spec import v2 as spec

#: The extension record that carries what the closed snapshot does not name.
EXTENSION = "openwop-bridge.run"
#: The era key of the log as v2 serves it: events are spelled for era 3 (RFC 0176 §A.2).
ERA = 3
_ERROR_KEYS = ("code", "message", "details")
#: Root fields the v2 SDK's ``RunSnapshot`` reads that the closed schema does not name.
SDK_FIELDS = ("interrupt", "parentNodeId")


def _named() -> frozenset[str]:
    return frozenset(spec.schema("run-snapshot.schema.json")["properties"]) | frozenset(SDK_FIELDS)


def _error(err: dict[str, Any]) -> dict[str, Any]:
    """``{code, message, details?}``: anything else the engine recorded moves into ``details``."""
    extra = {k: v for k, v in err.items() if k not in _ERROR_KEYS}
    code, message = str(err.get("code") or "internal_error"), str(err.get("message") or "the run failed")
    out: dict[str, Any] = {"code": code, "message": message}
    details = {**(err.get("details") or {}), **extra}
    if details:
        out["details"] = details
    return out


def close(snap: dict[str, Any]) -> dict[str, Any]:
    """A v2-spelled snapshot as the closed ``RunSnapshot``: unnamed fields under the extension record."""
    named = _named()
    out = {k: v for k, v in snap.items() if k in named}
    extra = {k: v for k, v in snap.items() if k not in named}
    out["eventLogSchemaVersion"] = ERA
    if isinstance(snap.get("error"), dict):
        out["error"] = _error(snap["error"])
    if "replayOf" in extra:
        if "parentRunId" in out:
            extra["parentRunId"] = out["parentRunId"]
        out["parentRunId"] = extra["replayOf"]
    if extra:
        out["extensions"] = {EXTENSION: extra}
    return out
