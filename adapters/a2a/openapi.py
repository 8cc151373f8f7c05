"""The OpenAPI fragment documenting the A2A routes (see :func:`openwop_bridge.a2a.a2a_routes`)."""

from __future__ import annotations

from typing import Any

from openwop_bridge.a2a.discovery import CARD_PATH, RPC_PATH
from openwop_bridge.host import error_responses


def a2a_openapi() -> dict[str, Any]:
    """``GET /.well-known/agent-card.json`` and ``POST /a2a`` (A2A 1.0 JSON-RPC)."""
    any_object = {"type": "object", "additionalProperties": True}
    return {
        "paths": {
            CARD_PATH: {
                "get": {
                    "summary": "The A2A 1.0 agent card: one skill per workflow (public)",
                    "tags": ["a2a"],
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "An A2A AgentCard",
                            "content": {"application/json": {"schema": any_object}},
                        }
                    },
                }
            },
            RPC_PATH: {
                "post": {
                    "summary": "A2A 1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, CancelTask, "
                    "SubscribeToTask",
                    "tags": ["a2a"],
                    # Any JSON: what is not a JSON-RPC request is answered as JSON-RPC answers it (-32600).
                    "requestBody": {"required": True, "content": {"application/json": {"schema": {}}}},
                    "responses": {
                        "200": {
                            "description": "A JSON-RPC response (errors included), or its stream (SSE)",
                            "content": {
                                "application/json": {"schema": any_object},
                                "text/event-stream": {"schema": {"type": "string"}},
                            },
                        },
                        **error_responses(400, 401, 413),
                    },
                }
            },
        }
    }
