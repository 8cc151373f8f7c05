"""Serving a workflow as an AG-UI agent: ``POST /agui/{workflowId}``.

One request is one AG-UI run, a stretch of the thread's OpenWOP run:

1. Refusals before the stream opens are OpenWOP error envelopes (unknown
   workflow, bad body, missing scope, an invalid resume entry — every entry is
   checked before any is applied, and one bad entry refuses the request).
2. The request is planned (every plan streams a run's events and state, so each
   needs ``runs:read``, as REST does to show them): start the thread's first (or next) run; answer or
   cancel the interrupts named in ``resume``; take a new user message as the
   answer to an open conversation turn; or, with nothing to do, re-emit the open
   interrupts (a reconnect after a reload). On a finished thread only a user
   message the thread has not seen starts the next run; a request bringing
   nothing new re-emits how the last run ended, so a reconnecting client never
   starts a workflow again by accident (:mod:`openwop_bridge.agui.planning`).
3. The stream follows the run's committed events (:meth:`openwop_bridge.Engine.follow`)
   from where this AG-UI run began until the run is idle again: it then finishes with the ``interrupt``
   outcome (every open interrupt), ``success`` (with the run's outputs) or
   ``cancelled``; a failed run ends with ``RUN_ERROR`` and its OpenWOP code (:mod:`openwop_bridge.agui.stream`).

The protocol is negotiated on the request's ``protocolVersion``: a client that
declares 1.0 or later gets the full 1.0 protocol; one that declares nothing or
an earlier version (clients built on ``@ag-ui/client`` before 1.0, such as
CopilotKit 1.75's) gets only what its schema accepts — its ``RUN_STARTED``
declares no version, and a cancelled run finishes without an outcome (the
``STATE_SNAPSHOT`` before it says ``cancelled``), since those clients know only
the ``success`` and ``interrupt`` outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError as PydanticValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from openwop_bridge import ConflictError, Engine, KeyRing, Principal, RunRecord, ValidationError, WorkflowDefinition
from openwop_bridge.agui import threads
from openwop_bridge.agui.mapping import names_no_interrupt, normalize_request
from openwop_bridge.agui.planning import Planner
from openwop_bridge.agui.stream import AguiStream
from openwop_bridge.agui.threads import ThreadBinding
from openwop_bridge.host import guarded_stream, read_json

Authenticate = Callable[[Request], Principal]


def speaks_1_0(declared: str | None) -> bool:
    """Whether a client's ``protocolVersion`` is 1.0 or later.

    No declaration, or a ``0.x`` one, is an older client. A declaration that
    cannot be read is taken as a newer one (the spec: proceed as for a newer version).
    """
    if declared is None:
        return False
    major = declared.split(".", 1)[0]
    return not major.isdigit() or int(major) >= 1


class AguiService:
    """The AG-UI surface over an :class:`~openwop_bridge.runtime.engine.Engine` (see the module docstring)."""

    def __init__(self, engine: Engine, *, authenticate: Authenticate | None = None, poll_s: float = 0.25) -> None:
        self.engine = engine
        self._authenticate = authenticate
        self.poll_s = poll_s

    def principal(self, request: Request) -> Principal:
        """The caller: the given authenticator, or the host app's key ring."""
        if self._authenticate is not None:
            return self._authenticate(request)
        ring: KeyRing = request.app.state.keyring
        return ring.authenticate(request.headers.get("authorization"))

    # --- the request --------------------------------------------------------------------

    async def run(self, request: Request, workflow_id: str) -> Response:
        """Handle ``POST /agui/{workflowId}``."""
        principal = self.principal(request)
        workflow = self.engine.workflow(workflow_id)
        body = await read_json(request)
        raw_thread = body.get("threadId", body.get("thread_id")) if isinstance(body, Mapping) else None
        binding = await threads.load(self.engine, principal.tenant, raw_thread) if isinstance(raw_thread, str) else None
        if binding is not None and binding.workflow_id != workflow_id:
            raise ConflictError(
                f"thread {raw_thread!r} belongs to workflow {binding.workflow_id!r}",
                details={"threadId": raw_thread, "workflowId": binding.workflow_id},
            )
        # The stream's place is taken before anything is planned or started: 429 beyond the limits.
        bound_run = binding.run_id if binding and binding.run_id else None
        return await guarded_stream(
            request, principal, bound_run, lambda: self._respond(principal, workflow, body, binding)
        )

    async def _respond(
        self, principal: Principal, workflow: WorkflowDefinition, body: Any, binding: ThreadBinding | None
    ) -> Response:
        """The stream answering a request whose body was read and whose thread was looked up."""
        run = await self.engine.run_record(binding.run_id) if binding and binding.run_id else None
        open_views = await self._open_views(run)
        idless = names_no_interrupt(body)
        repeated = idless and binding is not None and body.get("runId", body.get("run_id")) in binding.idless_resumes
        if repeated:
            # The same request again: its answer went to the interrupt open at the time.
            body = {k: v for k, v in body.items() if k not in ("resume", "forwardedProps", "forwarded_props")}
        try:
            agent_input = RunAgentInput.model_validate(normalize_request(body, list(open_views)))
        except PydanticValidationError as exc:
            problems = [f"{'/'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]
            raise ValidationError("the body is not a valid RunAgentInput", details={"problems": problems}) from exc
        plan = await Planner(self.engine).plan(principal, workflow, agent_input, binding, run, open_views)
        if repeated:
            plan.warnings.append(
                {
                    "code": "duplicate_resume",
                    "message": f"run {agent_input.run_id!r} already delivered this resume; it was not applied again",
                }
            )
        elif idless and agent_input.resume and binding is not None:
            binding.idless_resumes.append(agent_input.run_id)
            await threads.save(self.engine, binding)
        return StreamingResponse(
            AguiStream(self.engine, self.poll_s).events(
                agent_input, plan, current=speaks_1_0(agent_input.protocol_version)
            ),
            media_type=EventEncoder().get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _open_views(self, run: RunRecord | None) -> dict[str, dict[str, Any]]:
        if run is None or run.terminal:
            return {}
        return {
            r.interrupt_id: self.engine.interrupt_view(r, link=None)
            for r in await self.engine.open_interrupts(run.run_id)
        }
