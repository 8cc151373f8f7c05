"""The ``/v1`` route table: every operation of the major, in the order its routes match, and its document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openwop_bridge.host.http.openapi import Fragment
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.v1 import analytics, batch, decision_record, delegations, interrupts, meta, runs
from openwop_bridge.host.v1.openapi import document

#: Discovery, the document, liveness and metrics; runs and workflows; interrupts (the batch before
#: ``/v1/interrupts/{token}``, which its path would match too); the decision record; analytics.
OPERATIONS: tuple[Operation, ...] = (
    *meta.OPERATIONS,
    *runs.OPERATIONS,
    *batch.OPERATIONS,
    *interrupts.OPERATIONS,
    *decision_record.OPERATIONS,
    *analytics.OPERATIONS,
    *delegations.OPERATIONS,
)


def openapi_document(fragments: Sequence[Fragment] = (), *, link_page: bool = False) -> dict[str, Any]:
    """``GET /v1/openapi.json``: :data:`OPERATIONS` documented, the ``fragments`` of extra routes merged in
    (``link_page``: the signed-link inspection also answers a page)."""
    return document(OPERATIONS, fragments, link_page=link_page)
