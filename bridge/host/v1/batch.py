"""``POST /v1/interrupts/batch``: answer several interrupts in one request (see :mod:`openwop_bridge.runtime.batch`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.host.http.body import ClosedModel, parse, read_json
from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.host.http.idempotency import V1_RULES
from openwop_bridge.host.http.openapi_ops import error_responses, idempotency_key_header, json_response
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.runtime.batch import MAX_ITEMS, BatchItem

__all__ = ["OPERATIONS", "BatchBody"]


class BatchEntry(ClosedModel):
    """One answer: the interrupt's run-scoped address and the resume value."""

    runId: str = Field(min_length=1, max_length=256)
    nodeId: str = Field(min_length=1, max_length=512)
    resumeValue: Any


class BatchBody(ClosedModel):
    """``POST /v1/interrupts/batch``."""

    items: list[BatchEntry] = Field(min_length=1, max_length=MAX_ITEMS)
    #: All applied in one transaction or none (default); ``false``: each item stands alone.
    atomic: StrictBool = True


_OUTCOME = {
    "type": "object",
    "required": ["index", "runId", "nodeId", "status"],
    "properties": {
        "index": {"type": "integer"},
        "runId": {"type": "string"},
        "nodeId": {"type": "string"},
        "interruptId": {"type": "string"},
        "status": {"type": "string", "enum": ["resolved", "pending", "refused", "not-applied"]},
        "resumeValue": {},
        "error": {"$ref": "#/components/schemas/ErrorEnvelope"},
    },
}
_REPLY = {
    "type": "object",
    "required": ["atomic", "applied", "items"],
    "properties": {
        "atomic": {"type": "boolean"},
        "applied": {"type": "integer", "description": "How many items were applied"},
        "items": {"type": "array", "items": _OUTCOME},
    },
}


async def resolve_batch(request: Request) -> Response:
    """Answer every item: atomically (one transaction, or nothing and the first refusal) or each on its own."""
    who = principal(request)
    body = parse(BatchBody, await read_json(request))
    items = [BatchItem(e.runId, e.nodeId, e.resumeValue) for e in body.items]
    return JSONResponse(await engine(request).resolve_batch(who, items, atomic=body.atomic))


OPERATIONS = (
    Operation(
        "POST",
        "/v1/interrupts/batch",
        resolve_batch,
        "Answer several interrupts at once",
        {
            "200": json_response(_REPLY, "Every item's outcome"),
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                413,
                415,
                422,
                503,
                text={
                    403: "atomic: an item was refused (details.items names each item's outcome); nothing applied",
                    404: "atomic: an item's interrupt was not found; nothing applied",
                    409: "atomic: an item's interrupt was already settled; nothing applied",
                },
            ),
        },
        scope="approvals:respond",
        idempotency=V1_RULES,
        body=BatchBody,
        params=(idempotency_key_header(),),
        tags=("interrupts",),
    ),
)
