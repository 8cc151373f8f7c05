"""The v2 representation of ``/.well-known/openwop`` (capabilities.md), and the v2 OpenAPI document."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bridge.core.events import ENGINE_VERSION
from bridge.host.v2 import tokens
from bridge.host.v2.negotiation import PREFERRED, PROTOCOL_VERSIONS, V2

if TYPE_CHECKING:
    from bridge.runtime.engine import Engine


def discovery_document(engine: Engine) -> dict[str, Any]:
    """The v2 capabilities document: both majors, the interrupt family with its token algorithms."""
    return {
        "protocolVersions": PROTOCOL_VERSIONS,
        "preferredVersion": PREFERRED,
        "implementation": {
            "name": "openwop-bridge",
            "version": ENGINE_VERSION.split("/")[1],
            "vendor": "openwop-bridge",
        },
        "eventLogSchemaVersion": 3,  # the era key a v2 host writes (RFC 0176 §A.2); v2 events are spelled for it
        "fixtures": [wf.id for wf in engine.workflows()],
        "interrupt": {
            "status": "stable",
            "since": V2,
            "witness": "witnessable-unaided",
            "tokenAlgs": list(tokens.ALGS),
        },
    }


_OPERATIONS = [
    ("get", "/.well-known/openwop", "getCapabilities"),
    ("get", "/openapi.json", "getOpenApi"),
    ("post", "/runs", "createRun"),
    ("get", "/runs", "listRuns"),
    ("get", "/runs/{runId}", "getRun"),
    ("post", "/runs/{runId}/cancel", "cancelRun"),
    ("post", "/runs/{runId}:fork", "forkRun"),
    ("get", "/runs/{runId}/events", "streamRunEvents"),
    ("get", "/runs/{runId}/events/poll", "pollRunEvents"),
    ("post", "/runs/{runId}/interrupts/{nodeId}", "resolveInterruptByRun"),
    ("get", "/interrupts", "listPendingInterrupts"),
    ("get", "/interrupts/{token}", "inspectInterruptByToken"),
    ("post", "/interrupts/{token}", "resolveInterruptByToken"),
]


def openapi_document() -> dict[str, Any]:
    """A minimal OpenAPI 3.1 document naming the v2 operations served at root paths."""
    paths: dict[str, Any] = {}
    for method, path, op in _OPERATIONS:
        params = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in ("runId", "nodeId", "token")
            if "{" + name + "}" in path
        ]
        paths.setdefault(path, {})[method] = {
            "operationId": op,
            "parameters": [
                *params,
                {"name": "OpenWOP-Version", "in": "header", "required": False, "schema": {"type": "string"}},
            ],
            "responses": {"default": {"description": "the result, or an error envelope {error, message, details?}"}},
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "openwop-bridge (OpenWOP v2)", "version": V2},
        "servers": [{"url": "/"}],
        "paths": paths,
    }
