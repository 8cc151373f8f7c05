"""The routes of the LangGraph API (``/langgraph`` in ``serve``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from openwop_bridge import BridgeError, Engine, NotFoundError, Principal, RunRecord, ValidationError
from openwop_bridge.host import JSONResponse, array_stream, guarded, guarded_stream, read_json
from openwop_bridge.langgraph_api import shapes, threads
from openwop_bridge.langgraph_api.assistants import Assistants
from openwop_bridge.langgraph_api.service import LangGraphService, Segment
from openwop_bridge.langgraph_api.stream import run_stream, stream_modes

Handler = Callable[[Request], Awaitable[Response]]
log = logging.getLogger("openwop_bridge.langgraph_api")
_TRUE = ("1", "true", "True")


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body), read once through the host's bounded reader."""
    kept: dict[str, Any] | None = getattr(request.state, "langgraph_body", None)
    if kept is not None:
        return kept
    body = await read_json(request, required=False, absent={})
    if not isinstance(body, Mapping):
        raise ValidationError("the body must be a JSON object")
    kept = request.state.langgraph_body = dict(body)
    return kept


class LangGraphRoutes:
    """Handlers binding HTTP to :class:`LangGraphService`."""

    def __init__(self, engine: Engine, prefix: str) -> None:
        self.service = LangGraphService(engine)
        self.engine = engine
        self.prefix = prefix
        self.assistants = Assistants(engine)
        self._cancels: set[asyncio.Task[None]] = set()

    async def info(self, request: Request) -> Response:
        """``GET /info``: what this server is."""
        return JSONResponse({"version": "openwop-bridge", "flags": {"assistants": True, "crons": False}})

    async def search_assistants(self, request: Request) -> Response:
        """``POST /assistants/search``: one assistant per loaded workflow."""
        self.service.principal(request).require("workflows:read")
        body = await _body(request)
        graph = body.get("graph_id")
        matching = [w for w in self.engine.workflows() if graph in (None, w.id)]
        offset, limit = int(body.get("offset", 0)), int(body.get("limit", 10))
        page = matching[offset : offset + limit]
        return JSONResponse([shapes.assistant_json(w, await self.assistants.record(w)) for w in page])

    async def get_assistant(self, request: Request) -> Response:
        """``GET /assistants/{id}``."""
        self.service.principal(request).require("workflows:read")
        workflow = self.engine.workflow(request.path_params["assistant_id"])
        return JSONResponse(shapes.assistant_json(workflow, await self.assistants.record(workflow)))

    async def create_thread(self, request: Request) -> Response:
        """``POST /threads``."""
        thread = await self.service.create_thread(self.service.principal(request), await _body(request))
        return JSONResponse(shapes.thread_json(thread, *await self.service.current(thread)))

    async def search_threads(self, request: Request) -> Response:
        """``POST /threads/search``."""
        return JSONResponse(await self.service.search(self.service.principal(request), await _body(request)))

    async def _thread(self, request: Request, scope: str = "runs:read") -> tuple[Any, threads.Thread]:
        principal = self.service.principal(request)
        principal.require(scope)
        return principal, await self.service.thread(principal, request.path_params["thread_id"])

    async def get_thread(self, request: Request) -> Response:
        """``GET /threads/{id}``."""
        _, thread = await self._thread(request)
        return JSONResponse(shapes.thread_json(thread, *await self.service.current(thread)))

    async def get_state(self, request: Request) -> Response:
        """``GET /threads/{id}/state``."""
        _, thread = await self._thread(request)
        return JSONResponse(shapes.state_json(thread, *await self.service.current(thread)))

    async def update_state(self, request: Request) -> Response:
        """``POST /threads/{id}/state``."""
        principal, thread = await self._thread(request)
        await self.service.update_state(principal, thread, await _body(request))
        run, _, _ = await self.service.current(thread)
        return JSONResponse({"checkpoint": shapes.checkpoint(thread, run)})

    async def history(self, request: Request) -> Response:
        """``POST /threads/{id}/history``: the state of each of the thread's runs, newest first."""
        principal, thread = await self._thread(request)
        limit = (await _body(request)).get("limit", 10)
        if not isinstance(limit, int) or not 0 < limit <= 1000:
            raise ValidationError("limit must be 1-1000")
        run_ids = list(reversed(thread.runs[-limit:]))

        async def states() -> AsyncIterator[list[bytes]]:
            # One run's state at a time, sent at the client's pace: the array is never built whole.
            for run_id in run_ids:
                run = await self.engine.run_record(run_id)
                views, turns = await self.service.open_views(run), await self.service.turns(run)
                yield [orjson.dumps(shapes.state_json(thread, run, views, turns))]

        return await guarded_stream(request, principal, None, lambda: array_stream(states()))

    async def _segment(self, request: Request) -> tuple[Segment, dict[str, Any]]:
        principal = self.service.principal(request)
        body = await _body(request)
        thread_id = request.path_params["thread_id"]
        stream_modes(body.get("stream_mode"))
        thread = await threads.load(self.engine, principal.tenant, thread_id)
        if thread is None and body.get("if_not_exists") == "create":
            # A run that makes its thread stores it with the run, in the run's transaction.
            thread = self.service.new_thread(principal, thread_id)
        elif thread is None:
            raise NotFoundError(f"no thread {thread_id!r}")
        return await self.service.start_or_resume(principal, thread, body), body

    def _location(self, segment: Segment, rejoin: str | None = None) -> dict[str, str]:
        """``Content-Location``: the run; with ``rejoin`` (``stream?stream_mode=…`` or ``join``), ``Location`` too.

        LangGraph's SDKs follow ``Location`` with ``GET`` (and the stream's ``Last-Event-ID``) when the
        response is cut off; they resolve it under the API's base URL, so it leaves out the prefix.
        A stream's ``Location`` names its modes: the SDKs send none of their own when they reconnect.
        """
        run = f"/threads/{segment.thread.thread_id}/runs/{segment.run.run_id}"
        headers = {"Content-Location": f"{self.prefix}{run}"}
        if rejoin is not None:
            headers["Location"] = f"{run}/{rejoin}"
        return headers

    async def create_run(self, request: Request) -> Response:
        """``POST /threads/{id}/runs``: start or resume in the background."""
        segment, _ = await self._segment(request)
        run = await self.engine.run_record(segment.run.run_id) or segment.run
        views = await self.service.open_views(run)
        return JSONResponse(shapes.run_json(segment.thread, run, views), headers=self._location(segment))

    async def stream_run(self, request: Request) -> Response:
        """``POST /threads/{id}/runs/stream``.

        ``on_disconnect: "cancel"`` cancels the run if the client hangs up, when the caller may cancel
        runs. useStream sends it with every request, so a caller who may not (an approver) is served
        all the same, and hanging up leaves the run going.
        """
        cancel = (await _body(request)).get("on_disconnect") == "cancel"
        who = self.service.principal(request)
        canceller = self._canceller(request, cancel and who.has_scope("runs:cancel"))

        async def respond() -> Response:
            segment, body = await self._segment(request)
            return self._sse(segment, stream_modes(body.get("stream_mode")), canceller)

        # The stream's place is taken before the run starts or resumes: 429 beyond the limits.
        return await guarded_stream(request, who, None, respond)

    def _canceller(self, request: Request, wanted: bool) -> Principal | None:
        """Who cancels the run when the client hangs up, if asked (the right to cancel is checked now)."""
        if not wanted:
            return None
        principal = self.service.principal(request)
        principal.require("runs:cancel")
        return principal

    def _sse(self, segment: Segment, modes: set[str], canceller: Principal | None = None) -> Response:
        rejoin = "stream?" + urlencode([("stream_mode", m) for m in sorted(modes)])
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **self._location(segment, rejoin)}
        body = run_stream(self.service, segment, modes)
        if canceller is not None:
            body = self._cancelling(body, segment.run.run_id, canceller)
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

    async def _cancelling(self, parts: AsyncIterator[str], run_id: str, principal: Principal) -> AsyncIterator[str]:
        """``parts``; if the client hangs up before they end, the run is cancelled."""
        ended = False
        try:
            async for part in parts:
                yield part
            ended = True
        finally:
            if not ended:
                task = asyncio.get_running_loop().create_task(self._cancel(run_id, principal))
                self._cancels.add(task)
                task.add_done_callback(self._cancels.discard)

    async def _cancel(self, run_id: str, principal: Principal) -> None:
        try:
            await self.engine.cancel_run(run_id, principal, "the LangGraph client hung up (cancel_on_disconnect)")
        except BridgeError:
            log.warning("could not cancel run %s when its LangGraph client hung up", run_id, exc_info=True)

    async def wait_run(self, request: Request) -> Response:
        """``POST /threads/{id}/runs/wait``: the values once the run ends or waits on a person."""
        segment, _ = await self._segment(request)
        run = await self.service.wait(segment)
        values = await self.service.final_values(segment, run)
        return JSONResponse(values, headers=self._location(segment, "join"))

    async def list_runs(self, request: Request) -> Response:
        """``GET /threads/{id}/runs``: newest first."""
        _, thread = await self._thread(request)
        out = []
        for run_id in reversed(thread.runs[-100:]):
            run = await self.engine.run_record(run_id)
            if run is not None:
                out.append(shapes.run_json(thread, run, await self.service.open_views(run)))
        return JSONResponse(out)

    async def _run(self, request: Request) -> tuple[Any, threads.Thread, Any]:
        principal, thread = await self._thread(request)
        return principal, thread, await self.service.run_of(principal, thread, request.path_params["run_id"])

    async def get_run(self, request: Request) -> Response:
        """``GET /threads/{id}/runs/{runId}``."""
        _, thread, run = await self._run(request)
        return JSONResponse(shapes.run_json(thread, run, await self.service.open_views(run)))

    async def cancel_run(self, request: Request) -> Response:
        """``POST /threads/{id}/runs/{runId}/cancel``: cancel the OpenWOP run (``wait=1`` waits for it)."""
        principal, thread, run = await self._run(request)
        await self.engine.cancel_run(run.run_id, principal, "cancelled by a LangGraph client")
        if request.query_params.get("wait") in ("1", "true"):
            run = await self.service.wait(Segment(thread, run, run.next_seq - 1))
        run = await self.engine.run_record(run.run_id) or run
        return JSONResponse(shapes.run_json(thread, run, []), status_code=202 if not run.terminal else 200)

    async def join_run(self, request: Request) -> Response:
        """``GET /threads/{id}/runs/{runId}/join``: the values once the run ends or waits."""
        _, thread, run = await self._run(request)
        segment = Segment(thread, run, run.next_seq - 1)
        return JSONResponse(await self.service.final_values(segment, await self.service.wait(segment)))

    async def join_stream(self, request: Request) -> Response:
        """``GET /threads/{id}/runs/{runId}/stream``: rejoin a run's stream from now, or after ``Last-Event-ID``.

        A client that names no mode sends ``stream_mode=`` empty; that is ``values``.
        ``cancel_on_disconnect=true`` cancels the run if the client hangs up before the stream ends.
        """
        _, thread, run = await self._run(request)
        modes = stream_modes([m for m in request.query_params.getlist("stream_mode") if m] or None)
        canceller = self._canceller(request, request.query_params.get("cancel_on_disconnect") in _TRUE)
        stream = self._sse(Segment(thread, run, _resume_from(request, run)), modes, canceller)
        return guarded(request, self.service.principal(request), run.run_id, stream)

    def routes(self) -> list[Route]:
        """Every route, under the prefix."""
        p, t, r = self.prefix, f"{self.prefix}/threads/{{thread_id}}", f"{self.prefix}/threads/{{thread_id}}/runs"
        table: list[tuple[str, Handler, str]] = [
            (f"{p}/info", self.info, "GET"),
            (f"{p}/assistants/search", self.search_assistants, "POST"),
            (f"{p}/assistants/{{assistant_id}}", self.get_assistant, "GET"),
            (f"{p}/threads", self.create_thread, "POST"),
            (f"{p}/threads/search", self.search_threads, "POST"),
            (t, self.get_thread, "GET"),
            (f"{t}/state", self.get_state, "GET"),
            (f"{t}/state", self.update_state, "POST"),
            (f"{t}/history", self.history, "POST"),
            (r, self.create_run, "POST"),
            (r, self.list_runs, "GET"),
            (f"{r}/stream", self.stream_run, "POST"),
            (f"{r}/wait", self.wait_run, "POST"),
            (f"{r}/{{run_id}}", self.get_run, "GET"),
            (f"{r}/{{run_id}}/cancel", self.cancel_run, "POST"),
            (f"{r}/{{run_id}}/join", self.join_run, "GET"),
            (f"{r}/{{run_id}}/stream", self.join_stream, "GET"),
        ]
        merged: dict[str, dict[str, Handler]] = {}
        for path, handler, method in table:
            merged.setdefault(path, {})[method] = handler
        return [Route(path, _dispatch(handlers), methods=list(handlers)) for path, handlers in merged.items()]


def _resume_from(request: Request, run: RunRecord) -> int:
    """The event sequence a rejoined stream follows after: ``Last-Event-ID`` (one the run sent), else now."""
    given = request.headers.get("last-event-id")
    if not given:
        return run.next_seq - 1
    try:
        cursor = int(given)
    except ValueError:
        cursor = -2
    if not -1 <= cursor < run.next_seq:
        raise ValidationError(
            f"Last-Event-ID {given[:40]!r} is not an event of run {run.run_id}",
            details={"lastEventId": given[:40], "lastSequence": run.next_seq - 1},
        )
    return cursor


def _dispatch(handlers: dict[str, Handler]) -> Handler:
    async def handle(request: Request) -> Response:
        return await handlers[request.method](request)

    return handle


def langgraph_routes(engine: Engine, *, prefix: str = "/langgraph") -> list[Route]:
    """Routes serving every loaded workflow to LangGraph clients under ``prefix``."""
    return LangGraphRoutes(engine, prefix).routes()
