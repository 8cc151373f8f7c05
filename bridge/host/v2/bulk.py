"""``POST /runs:bulk-cancel`` (runs.md §Bulk cancel): each id cancelled on its own, one result per id.

An id is refused inside its entry, never at the top: a foreign tenant segment is
``id_tenant_mismatch``, a run the caller cannot see ``not_found``, an ended run
``run_terminal``, each as the error envelope in its entry. Only a malformed body or one over
:data:`MAX_RUN_IDS` ids is a 400.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import BridgeError, ValidationError
from openwop_bridge.host.http.body import ClosedModel, parse, read_json
from openwop_bridge.host.http.deps import engine, principal
from openwop_bridge.host.http.openapi_ops import json_response, schema_ref
from openwop_bridge.host.http.responses import JSONResponse
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.v2 import ids
from openwop_bridge.host.v2.doc import IDEMPOTENCY, errors
from openwop_bridge.host.v2.errors import RunTerminalError, v2_envelope
from openwop_bridge.host.v2.idempotency import RULES

#: The most ids one request may name (runs.md: RECOMMENDED 100).
MAX_RUN_IDS = 100


class BulkCancelBody(ClosedModel):
    """``{ runIds[1..100], reason? }``."""

    runIds: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(min_length=1)
    reason: str | None = Field(default=None, max_length=1000)


async def cancel_one(request: Request, who: Principal, run_id: str, reason: str | None) -> dict[str, Any]:
    """Cancel one run the caller can see: ``{runId, status}``; 409 ``run_terminal`` once it has ended."""
    eng = engine(request)
    run = await eng.visible_run(run_id, who)
    record = await eng.run_record(run.run_id)
    if record is not None and record.terminal:
        raise RunTerminalError("the run has already ended", details={"status": record.status})
    result = await eng.cancel_run(run.run_id, who, reason)
    return {**result, "runId": ids.bind(run.tenant, run.run_id)}


async def _entry(request: Request, who: Principal, wire: str, reason: str | None) -> dict[str, Any]:
    try:
        done = await cancel_one(request, who, ids.resolve_bound(wire, who), reason)
    except BridgeError as exc:
        _, envelope = v2_envelope(exc.code, exc.message, exc.details, exc.status)
        return {"runId": wire, "ok": False, "error": envelope}
    return {"runId": wire, "ok": True, "status": done["status"]}


async def bulk_cancel(request: Request) -> Response:
    """``POST /runs:bulk-cancel``: ``200 {results[]}`` in request order, even when every id failed."""
    who = principal(request)
    raw = await read_json(request)
    named = raw.get("runIds") if isinstance(raw, dict) else None
    if isinstance(named, list) and len(named) > MAX_RUN_IDS:
        raise ValidationError(
            f"at most {MAX_RUN_IDS} run ids per request", details={"maxRunIds": MAX_RUN_IDS, "count": len(named)}
        )
    body = parse(BulkCancelBody, raw)
    return JSONResponse({"results": [await _entry(request, who, wire, body.reason) for wire in body.runIds]})


OPERATIONS = (
    Operation(
        "POST",
        "/runs:bulk-cancel",
        bulk_cancel,
        f"Cancel up to {MAX_RUN_IDS} runs, each on its own: one result per id, in request order, even when "
        "every id failed (over the cap: 400 validation_error with details.maxRunIds)",
        {"200": json_response(schema_ref("BulkCancelResponse")), **errors(400, 401, 403, 409, 413, 415)},
        scope="runs:cancel",
        idempotency=RULES,
        body=BulkCancelBody,
        params=(IDEMPOTENCY,),
        operation_id="bulkCancelRuns",
    ),
)
