"""``GET /v1/openapi.json``: OpenAPI 3.1 for the whole ``/v1`` surface, built from its route table.

The operations and their request bodies come from the route table (:mod:`openwop_bridge.host.v1.api`)
(the same pydantic models that validate the bodies); the OpenWOP documents (RunSnapshot,
RunEventDoc, InterruptPayload, ErrorEnvelope, …) are the vendored official schemas, embedded.
Routes served next to the REST surface (the web pages, adapters mounted by plugins) describe
themselves with fragments (:mod:`openwop_bridge.host.http.openapi`), merged in.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from openwop_bridge import spec
from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.http.openapi import Fragment, merge_fragment
from openwop_bridge.host.http.routing import Operation, body_schemas, paths

_EMBEDDED = {
    "ErrorEnvelope": "error-envelope.schema.json",
    "RunSnapshot": "run-snapshot.schema.json",
    "RunEventDoc": "run-event.schema.json",
    "InterruptPayload": "suspend-request.schema.json",
    "WorkflowDefinition": "workflow-definition.schema.json",
    "Capabilities": "capabilities.schema.json",
    "AgentRef": "agent-ref.schema.json",
    "PromptRef": "prompt-ref.schema.json",
}
_HTML = {"schema": {"type": "string"}}


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _embedded_schemas() -> dict[str, Any]:
    """The official schemas (and everything they reference) with every ``$ref`` rewritten
    to a pointer inside this document, so tools that ignore embedded ``$id`` resolve them."""
    names = {file: name for name, file in _EMBEDDED.items()}
    pending = list(names)
    while pending:
        for ref in _refs(spec.schema(pending.pop())):
            target = ref.split("#", 1)[0].rsplit("/", 1)[-1]
            if target.endswith(".json") and target not in names:
                names[target] = str(spec.schema(target).get("title", target)).replace(" ", "")
                pending.append(target)

    def rewrite(node: Any, file: str) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v, file) for k, v in node.items() if k not in ("$id", "$schema")}
            ref = node.get("$ref")
            if isinstance(ref, str):
                target, _, fragment = ref.partition("#")
                target_file = target.rsplit("/", 1)[-1] if target else file
                out["$ref"] = f"#/components/schemas/{names[target_file]}{fragment}"
            return out
        if isinstance(node, list):
            return [rewrite(v, file) for v in node]
        return node

    return {name: rewrite(spec.schema(file), file) for file, name in names.items()}


def _with_link_page(inspect: dict[str, Any]) -> None:
    """``GET /v1/interrupts/{token}`` also answers ``text/html``: the link page, which shows an unusable
    link as a page with the status the JSON answer would have had (the store's 503 stays JSON)."""
    inspect["summary"] += " (a page under Accept: text/html)"
    for status, response in inspect["responses"].items():
        if status != "503":
            response["content"]["text/html"] = copy.deepcopy(_HTML)


def document(
    table: Sequence[Operation], fragments: Sequence[Fragment] = (), *, link_page: bool = False
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the v1 operations ``table``, with the ``fragments`` of the extra routes merged in.

    ``link_page``: ``GET /v1/interrupts/{token}`` also answers ``text/html`` (the
    signed-link page). A fragment that documents an operation or schema already
    documented differently is a programming error (``ValueError``).
    """
    documented = paths(table)
    if link_page:
        _with_link_page(documented["/v1/interrupts/{token}"]["get"])
    document = {
        # No jsonSchemaDialect: the default (OpenAPI 3.1's base dialect, JSON Schema 2020-12 with the OpenAPI
        # vocabulary) reads these schemas alike, and Swagger UI at /docs/ flags any other value as unsupported.
        "openapi": "3.1.0",
        "info": {
            "title": "openwop-bridge",
            "version": ENGINE_VERSION.split("/")[1],
            "description": "OpenWOP v1.1 host: runs, interrupts, signed links, events.",
        },
        "paths": documented,
        "components": {
            "schemas": {**_embedded_schemas(), **body_schemas(table)},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "API key"}},
        },
        "security": [{"bearer": []}],
    }
    for fragment in fragments:
        merge_fragment(document, fragment() if callable(fragment) else fragment)
    return document
