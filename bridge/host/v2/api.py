"""The v2 route table, and what the app serves of v2 beside it: the documents, the webhook surface,
version negotiation and v2 error envelopes.

The app (:mod:`openwop_bridge.host.app`, :mod:`openwop_bridge.host.layer`) imports this module alone of v2.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.v2 import delegations, routes, webhooks
from openwop_bridge.host.v2.discovery import discovery_document
from openwop_bridge.host.v2.doc import META
from openwop_bridge.host.v2.documents import WebhookWire
from openwop_bridge.host.v2.errors import error_response as v2_error_response
from openwop_bridge.host.v2.errors import v2_route
from openwop_bridge.host.v2.negotiation import Negotiated, is_v2_path, named, negotiate
from openwop_bridge.host.v2.openapi import document
from openwop_bridge.notify.webhook.channel import Webhooks, WebhookSettings

__all__ = [
    "OPERATIONS",
    "Negotiated",
    "WebhookSettings",
    "WebhookWire",
    "Webhooks",
    "discovery_document",
    "is_v2_path",
    "named",
    "negotiate",
    "openapi_document",
    "v2_error_response",
    "v2_route",
]

#: Discovery is one resource with a representation per major: the v1 table serves it, this one documents v2's.
DISCOVERY = Operation(
    "GET",
    "/.well-known/openwop",
    None,
    "Discovery (OpenWOP-Version selects the representation)",
    META,
    auth=False,
    operation_id="getCapabilities",
)

#: Every v2 operation, in the order its routes match.
OPERATIONS: tuple[Operation, ...] = (DISCOVERY, *routes.OPERATIONS, *webhooks.OPERATIONS, *delegations.OPERATIONS)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of :data:`OPERATIONS` (``GET /openapi.json``)."""
    return document(OPERATIONS)
