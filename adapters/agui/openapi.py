"""The OpenAPI fragment documenting the AG-UI routes (see :func:`openwop_bridge.agui.agui_routes`)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput

from openwop_bridge.host import error_responses

_PREFIX = "AgUi"


def agui_openapi(prefix: str = "/agui") -> dict[str, Any]:
    """``POST {prefix}/{workflowId}`` (a RunAgentInput in, AG-UI events out) and its capabilities route."""
    body = RunAgentInput.model_json_schema(by_alias=True, ref_template=f"#/components/schemas/{_PREFIX}{{model}}")
    schemas = {f"{_PREFIX}{name}": schema for name, schema in body.pop("$defs", {}).items()}
    schemas[f"{_PREFIX}RunAgentInput"] = body
    workflow_id = {
        "name": "workflowId",
        "in": "path",
        "required": True,
        "description": "The workflow served as an AG-UI agent",
        "schema": {"type": "string"},
    }
    return {
        "paths": {
            f"{prefix}/{{workflowId}}": {
                "post": {
                    "summary": "Run the workflow as an AG-UI agent: a RunAgentInput in, AG-UI events out (SSE)",
                    "tags": ["agui"],
                    "parameters": [workflow_id],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": f"#/components/schemas/{_PREFIX}RunAgentInput"}}
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "AG-UI events; errors after the stream started are RUN_ERROR events",
                            "content": {"text/event-stream": {"schema": {"type": "string"}}},
                        },
                        **error_responses(
                            400,
                            401,
                            403,
                            404,
                            409,
                            413,
                            415,
                            503,
                            text={409: "the thread belongs to another workflow, or another request started it"},
                        ),
                    },
                }
            },
            f"{prefix}/{{workflowId}}/capabilities": {
                "get": {
                    "summary": "What the agent supports (AG-UI capabilities)",
                    "tags": ["agui"],
                    "parameters": [workflow_id],
                    "responses": {
                        "200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                        **error_responses(401, 403, 404, 503),
                    },
                }
            },
        },
        "components": {"schemas": schemas},
    }
