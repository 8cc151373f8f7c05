"""``GET /v1/openapi.json``: OpenAPI 3.1 for the whole surface.

Request bodies come from the same pydantic models that validate them; the
OpenWOP documents (RunSnapshot, RunEventDoc, InterruptPayload, ErrorEnvelope)
are the vendored official schemas, embedded under their ``$id``.

Routes served next to the REST surface (the web pages, adapters mounted by
plugins) describe themselves with *fragments*: ``{"paths": …, "components":
{"schemas": …}}`` merged into the document by :func:`openapi_document`, so the
document lists what the host actually serves and ``bridge`` never imports an
adapter. A fragment may be a function returning one, called when the document is
first asked for (an adapter whose schemas come from a protocol library it loads
on first use). The v1 paths are built in :mod:`openwop_bridge.host.http.openapi_paths`, from
the pieces of :mod:`openwop_bridge.host.http.openapi_ops`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from openwop_bridge import spec
from openwop_bridge.core import kinds
from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.host.http import openapi_paths
from openwop_bridge.host.http.body import CancelBody, CreateRunBody, ForkBody, LinkBody, ResolveBody
from openwop_bridge.host.http.openapi_ops import SSE, error_responses, json_response, operation, path_param, query_param

__all__ = ["Fragment", "error_responses", "merge_fragment", "openapi_document", "web_fragment"]

#: An OpenAPI fragment, or a function building it when the document is first asked for.
Fragment: TypeAlias = Mapping[str, Any] | Callable[[], Mapping[str, Any]]

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


def _schemas() -> dict[str, Any]:
    """The component schemas: the embedded OpenWOP schemas and the request bodies."""
    schemas = _embedded_schemas()
    for model in (CreateRunBody, ResolveBody, CancelBody, ForkBody, LinkBody):
        body_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(body_schema.pop("$defs", {}))
        schemas[model.__name__] = body_schema
    return schemas


def openapi_document(fragments: Sequence[Fragment] = (), *, link_page: bool = False) -> dict[str, Any]:
    """The OpenAPI 3.1 document, with the ``fragments`` of the extra routes merged in.

    ``link_page``: ``GET /v1/interrupts/{token}`` also answers ``text/html`` (the
    signed-link page). A fragment that documents an operation or schema already
    documented differently is a programming error (``ValueError``).
    """
    paths: dict[str, Any] = {
        **openapi_paths.discovery_paths(),
        **openapi_paths.workflow_paths(),
        **openapi_paths.run_paths(),
        **openapi_paths.history_paths(),
        **openapi_paths.interrupt_paths(),
        **openapi_paths.inbox_and_link_paths(link_page),
    }
    document = {
        # No jsonSchemaDialect: the default (OpenAPI 3.1's base dialect, JSON Schema 2020-12 with the OpenAPI
        # vocabulary) reads these schemas alike, and Swagger UI at /docs/ flags any other value as unsupported.
        "openapi": "3.1.0",
        "info": {
            "title": "openwop-bridge",
            "version": ENGINE_VERSION.split("/")[1],
            "description": "OpenWOP v1.1 host: runs, interrupts, signed links, events.",
        },
        "paths": paths,
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "API key"}},
        },
        "security": [{"bearer": []}],
    }
    for fragment in fragments:
        merge_fragment(document, fragment() if callable(fragment) else fragment)
    return document


def merge_fragment(document: dict[str, Any], fragment: Mapping[str, Any]) -> None:
    """Add a fragment's paths and component schemas to ``document`` (``ValueError`` on a clash)."""
    for path, operations in fragment.get("paths", {}).items():
        target = document["paths"].setdefault(path, {})
        for method, documented in operations.items():
            if method in target:
                raise ValueError(f"{method.upper()} {path} is documented twice")
            target[method] = copy.deepcopy(documented)
    schemas = document["components"]["schemas"]
    for name, schema in fragment.get("components", {}).get("schemas", {}).items():
        if name in schemas and schemas[name] != schema:
            raise ValueError(f"schema {name!r} is documented twice, differently")
        schemas[name] = copy.deepcopy(schema)


def web_fragment() -> dict[str, Any]:
    """The operator inbox's routes (``openwop_bridge.host.web.web_routes``)."""
    html = {"text/html": {"schema": {"type": "string"}}}
    return {
        "paths": {
            "/ui": {
                "get": operation(
                    "Redirects to /ui/",
                    {"308": {"description": "To ui/", "headers": {"Location": {"schema": {"type": "string"}}}}},
                    auth=False,
                    tag="web",
                    store=False,
                )
            },
            "/ui/": {
                "get": operation(
                    "The operator inbox page (signs in from the browser)",
                    {"200": {"description": "The page", "content": html}},
                    auth=False,
                    tag="web",
                    store=False,
                )
            },
            "/ui/api/me": {
                "get": operation(
                    "The signed-in principal and what its key allows",
                    {"200": json_response({"type": "object"}), **error_responses(401)},
                    tag="web",
                    store=False,
                )
            },
            "/ui/api/inbox/count": {
                "get": operation(
                    "How many requests wait in the caller's inbox, over all its pages",
                    {
                        "200": json_response(
                            {
                                "type": "object",
                                "required": ["pending"],
                                "properties": {"pending": {"type": "integer", "minimum": 0}},
                            }
                        ),
                        **error_responses(400, 401, 403),
                    },
                    params=[query_param("kind", "Count only this kind", {"type": "string", "enum": list(kinds.KINDS)})],
                    tag="web",
                )
            },
            "/ui/api/inbox/events": {
                "get": operation(
                    "event: changed when the caller's inbox may have changed (SSE, ends after a while)",
                    {
                        "200": {"description": "Server-sent events", "content": {"text/event-stream": SSE}},
                        **error_responses(401, 403),
                    },
                    tag="web",
                )
            },
            "/ui/static/{path}": {
                "get": operation(
                    "The pages' scripts and styles",
                    {
                        "200": {"description": "The file", "content": {"*/*": {"schema": {"type": "string"}}}},
                        "304": {"description": "Not modified"},
                        **error_responses(404),
                    },
                    params=[path_param("path", "File name")],
                    auth=False,
                    tag="web",
                    store=False,
                )
            },
        }
    }
