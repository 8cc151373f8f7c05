"""``GET /openapi.json`` under v2: OpenAPI 3.1 for the v2 routes served at root paths, built from their table.

Every operation's declaration (:mod:`.routes`, :mod:`.bulk`, :mod:`.webhooks`) lists its parameters
(``OpenWOP-Version`` is added to each here), its request body (the same pydantic models the routes
validate with) and the statuses the route really answers (:mod:`.doc`); every error is the v2 error
envelope, the vendored ``error-envelope.schema.json`` embedded as ``ErrorEnvelope``; the 200 bodies
are real schemas (:mod:`.openapi_schemas`). A run's events stream as ``text/event-stream``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.http.routing import Operation, body_schemas, paths
from openwop_bridge.host.v2.doc import VERSION
from openwop_bridge.host.v2.openapi_schemas import component_schemas
from openwop_bridge.spec import v2 as spec_v2


def _error_envelope() -> dict[str, Any]:
    """The vendored v2 error envelope, its one reference pointed inside the document."""

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v) for k, v in node.items() if k not in ("$id", "$schema")}
            if node.get("$ref") == "ids.schema.json#/$defs/eventId":
                out["$ref"] = "#/components/schemas/EventId"
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    envelope: dict[str, Any] = rewrite(spec_v2.schema("error-envelope.schema.json"))
    return envelope


def document(table: Sequence[Operation]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the v2 operations ``table`` (the route table's, :mod:`.api`)."""
    schemas: dict[str, Any] = {"ErrorEnvelope": _error_envelope(), **component_schemas()}
    schemas["EventId"] = spec_v2.schema("ids.schema.json")["$defs"]["eventId"]
    schemas.update(body_schemas(table))
    return {
        # No jsonSchemaDialect: the default (OpenAPI 3.1's base dialect, JSON Schema 2020-12 with the OpenAPI
        # vocabulary) reads these schemas alike, and Swagger UI at /docs/ flags any other value as unsupported.
        "openapi": "3.1.0",
        "info": {
            "title": "openwop-bridge (OpenWOP v2)",
            "version": ENGINE_VERSION.split("/")[1],
            "description": "OpenWOP 2.0 at root paths, beside the /v1 surface, over the same runs.",
        },
        "servers": [{"url": "/"}],
        "paths": paths(table, [VERSION]),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "API key"}},
        },
        "security": [{"bearer": []}],
    }
