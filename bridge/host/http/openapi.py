"""OpenAPI fragments: how routes served beside the OpenWOP surface describe themselves.

Routes served next to the REST surface (the web pages, adapters mounted by plugins) describe
themselves with *fragments*: ``{"paths": …, "components": {"schemas": …}}`` merged into the v1
document (:mod:`openwop_bridge.host.v1.openapi`) by :func:`merge_fragment`, so the document lists
what the host actually serves and ``bridge`` never imports an adapter. A fragment may be a function
returning one, called when the document is first asked for (an adapter whose schemas come from a
protocol library it loads on first use). The pieces operations are built from are
:mod:`openwop_bridge.host.http.openapi_ops`'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from openwop_bridge.core import kinds
from openwop_bridge.host.http.openapi_ops import SSE, error_responses, json_response, operation, path_param, query_param

__all__ = ["Fragment", "error_responses", "merge_fragment", "web_fragment"]

#: An OpenAPI fragment, or a function building it when the document is first asked for.
Fragment: TypeAlias = Mapping[str, Any] | Callable[[], Mapping[str, Any]]


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
            "/ui/api/inbox/for": {
                "get": operation(
                    "Of the listed approvals, those the caller may answer now in someone else's place (a delegation)",
                    {"200": json_response(_STAND_INS), **error_responses(400, 401, 403)},
                    params=[
                        {
                            **query_param("id", "An approval's interrupt id (repeat for more, at most 500)"),
                            "schema": {"type": "array", "maxItems": 500, "items": {"type": "string"}},
                            "style": "form",
                            "explode": True,
                        }
                    ],
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
            **_passkey_paths(),
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


#: ``GET /ui/api/inbox/for``'s answer: per interrupt id, whether the caller may vote in their own slot too,
#: and whom they may answer for there.
_STAND_INS = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["own", "for"],
                "properties": {
                    "own": {"type": "boolean"},
                    "for": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["delegator", "delegationId", "until"],
                            "properties": {
                                "delegator": {"type": "string"},
                                "delegationId": {"type": "string"},
                                "until": {"type": "string", "format": "date-time"},
                            },
                        },
                    },
                },
            },
        }
    },
}


def _passkey_paths() -> dict[str, Any]:
    """The inbox's passkey endpoints (``openwop_bridge.host.web.passkeys``)."""
    options = json_response({"type": "object", "description": "WebAuthn options (JSON), for the browser"})
    refusals = error_responses(400, 401, 403, 404, 409, 410, 413, 415, 429)
    listed = {
        "type": "object",
        "required": ["passkeys"],
        "properties": {"passkeys": {"type": "array", "maxItems": 10, "items": {"type": "object"}}},
    }
    credential = {"type": "object", "required": ["credential"], "properties": {"credential": {"type": "object"}}}
    value = {"description": "the answer the passkey will confirm"}
    decision = {
        "oneOf": [
            {
                "type": "object",
                "description": "signed in: the interrupt at this run and node",
                "required": ["runId", "nodeId", "resumeValue"],
                "properties": {"runId": {"type": "string"}, "nodeId": {"type": "string"}, "resumeValue": value},
                "additionalProperties": False,
            },
            {
                "type": "object",
                "description": "a signed link's token (its subject answers)",
                "required": ["token", "resumeValue"],
                "properties": {"token": {"type": "string"}, "resumeValue": value},
                "additionalProperties": False,
            },
        ]
    }
    return {
        "/ui/api/passkeys": {
            "get": operation(
                "The caller's passkeys", {"200": json_response(listed), **error_responses(401)}, tag="web"
            ),
            "post": operation(
                "Keep the passkey the browser just registered",
                {"201": json_response({"type": "object"}), **refusals},
                body={"required": True, "content": {"application/json": {"schema": credential}}},
                tag="web",
            ),
        },
        "/ui/api/passkeys/options": {
            "post": operation(
                "WebAuthn creation options for a new passkey of the caller",
                {"200": options, **refusals},
                tag="web",
            )
        },
        "/ui/api/passkeys/challenge": {
            "post": operation(
                "WebAuthn request options whose challenge binds one decision (interrupt, action, resume value)",
                {"200": options, **refusals},
                body={"required": True, "content": {"application/json": {"schema": decision}}},
                auth=False,
                tag="web",
            )
        },
    }
