"""The MCP server: the official SDK's low-level ``Server`` on its streamable HTTP transport.

Every request carries the bridge's API key (``Authorization: Bearer``); the gate
(:mod:`openwop_bridge.mcp.mount`) refuses a missing or wrong key with the 401 envelope
before the SDK sees the request, and imports this module, with the SDK, on the
first request it lets through. Tools are the workflows ``GET /v1/workflows`` lists for the same key.

A run that waits on people becomes, on MCP 2026-07-28, an ``InputRequiredResult``
whose ``inputRequests`` hold one form ``elicitation/create`` per open interrupt,
keyed by the interrupt id; ``requestState`` names the run and the interrupts, and
the SDK's :class:`RequestStateBoundary` seals it (AES-GCM, under keys derived from
the link-signing keys, so they are shared through the store and rotate with them:
:mod:`openwop_bridge.mcp.state`) and refuses a forged or expired one. The bridge binds
it to the caller's tenant and principal, and each state answers once: a replay is
refused before anything runs; a retry whose answers are refused (a key that may not
answer) changes nothing and leaves the state unused. On the handshake era
(2025-06-18, 2025-11-25) the same wait is an ``elicitation/create`` request sent
during the call.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import orjson
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp

from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from openwop_bridge import BridgeError, Engine, InterruptRecord, Principal, RunRecord, ValidationError
from openwop_bridge.host import MAX_JSON_DEPTH, too_deep
from openwop_bridge.mcp.calls import answerable, apply, elicitation, finished, needs_passkey, preview, settle, waiting
from openwop_bridge.mcp.state import STATE_TTL_S, DerivedKeyCodec, ReloadUnknownKeys, claim, new_nonce
from openwop_bridge.mcp.tools import tools_of

NAME = "openwop-bridge"
#: The most interrupts asked about at once for whom the caller stands in (the engine's limit per question).
STAND_INS_AT_ONCE = 500
#: Why a call ends waiting when the run waits only on interrupts the caller's key may not answer.
NOT_YOURS = (
    "this key may not answer it (it lacks the approvals:respond scope, or the gate's role, scope or approvers); "
    "someone who may must answer"
)


def _caller(ctx: ServerRequestContext[Any, Any]) -> tuple[Principal, str]:
    """The principal the gate authenticated for this request, and the base URL for links."""
    request = ctx.request
    if not isinstance(request, Request) or not isinstance(request.scope.get("openwop_principal"), Principal):
        raise MCPError(types.INVALID_REQUEST, "unauthenticated")
    base = request.app.state.public_url or str(request.base_url)
    return request.scope["openwop_principal"], str(base).rstrip("/")


def _has_forms(ctx: ServerRequestContext[Any, Any]) -> bool:
    caps = ctx.session.client_capabilities
    return caps is not None and caps.elicitation is not None


class McpService:
    """The tool handlers, over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """One tool per workflow the key may list, sorted by name."""
        principal, _ = _caller(ctx)
        try:
            principal.require("workflows:read")
        except BridgeError as exc:
            raise MCPError(types.INVALID_REQUEST, exc.message) from exc
        return types.ListToolsResult(tools=tools_of(self.engine.workflows()))

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run the workflow; on a wait, ask for the answers (elicitation) or return input-required."""
        principal, base = _caller(ctx)

        async def progress(seq: int, message: str) -> None:
            await ctx.session.report_progress(seq, None, message)

        try:
            if params.request_state:
                started = await self._answer_round(principal, params, base)
            else:
                started = await self._start(principal, params)
            if isinstance(started, types.CallToolResult):
                return started
            run, after = started, -1
            while True:
                run, opened, after = await settle(self.engine, run.run_id, after, progress)
                if run.terminal:
                    return await finished(self.engine, run, base)
                # Forms only for what this key may answer, itself or in someone's place (a delegation);
                # the rest is described, with a link to look.
                own = {r.interrupt_id for r in opened if await self.engine.may_answer(principal, r)}
                voters = await self._voters(principal, opened, own)
                mine = [r for r in opened if r.interrupt_id in voters]
                if not _has_forms(ctx) or not mine or not answerable(mine):
                    reason = (
                        "this client takes no elicitation forms"
                        if not _has_forms(ctx)
                        else NOT_YOURS
                        if not mine
                        else "it needs the person's passkey: answer in the inbox or on the link's page"
                        if any(needs_passkey(r) for r in mine)
                        else "no form fits"
                    )
                    return waiting(self.engine, principal, run, opened, base, reason, own)
                if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    return self._input_required(principal, run, mine, voters)
                ended = await self._elicit(ctx, principal, run, mine, voters, base)
                if ended is not None:
                    return ended
        except BridgeError as exc:
            return error_result(exc)

    async def _start(self, principal: Principal, params: types.CallToolRequestParams) -> RunRecord:
        storable(params.arguments, "arguments")
        try:
            return await self.engine.create_run(principal, params.name, inputs=params.arguments or {})
        except ValidationError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message, exc.details) from exc

    async def _voters(self, principal: Principal, opened: list[InterruptRecord], own: set[str]) -> dict[str, list[str]]:
        """For each open interrupt the caller may answer: whom its form offers to answer for.

        Empty when the caller answers only as themselves (the form asks no name); else the caller
        first when they may answer as themselves, then each person they stand in for.
        """
        voters: dict[str, list[str]] = {i: [] for i in own}
        ids = [r.interrupt_id for r in opened]
        for start in range(0, len(ids), STAND_INS_AT_ONCE):
            for record, delegations in await self.engine.stand_ins(principal, ids[start : start + STAND_INS_AT_ONCE]):
                mine = [principal.id] if record.interrupt_id in own else []
                voters[record.interrupt_id] = mine + [d.delegator for d in delegations]
        return voters

    def _input_required(
        self, principal: Principal, run: RunRecord, opened: list[InterruptRecord], voters: dict[str, list[str]]
    ) -> types.InputRequiredResult:
        requests: types.InputRequests = {
            r.interrupt_id: types.ElicitRequest(params=elicitation(r, voters.get(r.interrupt_id, ()))) for r in opened
        }
        state = {
            "tenant": run.tenant,
            "principal": principal.id,
            "run": run.run_id,
            "ids": sorted(requests),
            "nonce": new_nonce(),
        }
        return types.InputRequiredResult(input_requests=requests, request_state=json.dumps(state))

    async def _answer_round(
        self, principal: Principal, params: types.CallToolRequestParams, base: str
    ) -> RunRecord | types.CallToolResult:
        """Apply the answers of a retried call (2026-07-28); a stale one (answered elsewhere) is skipped."""
        try:
            state = json.loads(params.request_state or "")
        except ValueError as exc:
            raise MCPError(types.INVALID_PARAMS, "requestState is not this server's") from exc
        if (
            not isinstance(state, dict)
            or state.get("tenant") != principal.tenant
            or state.get("principal") != principal.id
        ):
            raise MCPError(types.INVALID_PARAMS, "requestState belongs to another caller")
        run = await self.engine.visible_run(str(state.get("run")), principal)
        if run.workflow_id != params.name:
            raise MCPError(types.INVALID_PARAMS, "requestState belongs to another tool")
        answers = await self._checked_answers(principal, run, state, params.input_responses or {})
        if not isinstance(state.get("nonce"), str) or not await claim(self.engine, state["nonce"]):
            raise MCPError(
                types.INVALID_PARAMS,
                "requestState was already used: each one answers once; call the tool again to start anew",
                {"reason": "request_state_used", "runId": run.run_id},
            )
        for interrupt_id, response in answers:
            opened = {r.interrupt_id: r for r in await self.engine.open_interrupts(run.run_id)}
            if interrupt_id in opened:
                ended = await self._answer(principal, run, opened[interrupt_id], response, base)
                if ended is not None:
                    return ended
        return run

    async def _checked_answers(
        self, principal: Principal, run: RunRecord, state: dict[str, Any], responses: dict[str, Any]
    ) -> list[tuple[str, types.ElicitResult]]:
        """The answers of a retry that would be applied, each checked first.

        A refusal here (a key that may not answer, a wrong role, an invalid answer) changes
        nothing, so it does not spend the state: the same state answers from a key that may.
        An interrupt answered elsewhere meanwhile is left out (the run's real state decides).
        """
        opened = {r.interrupt_id: r for r in await self.engine.open_interrupts(run.run_id)}
        checked: list[tuple[str, types.ElicitResult]] = []
        for interrupt_id, response in responses.items():
            if interrupt_id not in state.get("ids", ()) or not isinstance(response, types.ElicitResult):
                continue
            storable(response.content, "answers")
            record = opened.get(interrupt_id)
            if record is None:
                continue
            try:
                await preview(self.engine, principal, record, response.action, response.content)
            except BridgeError as exc:
                if exc.status != 409:
                    raise
                continue
            checked.append((interrupt_id, response))
        return checked

    async def _answer(
        self, principal: Principal, run: RunRecord, record: InterruptRecord, answer: types.ElicitResult, base: str
    ) -> types.CallToolResult | None:
        """Apply one form answer; a result ends the call (cancelled, or a vote that waits on others)."""
        try:
            outcome = await apply(self.engine, principal, record, answer.action, answer.content)
        except BridgeError as exc:
            if exc.status == 409:
                return None  # answered elsewhere meanwhile: the run's real state decides
            raise
        if answer.action == "cancel":
            return cancelled(record)
        if outcome.get("status") == "pending":
            fresh = await self.engine.open_interrupts(run.run_id)
            return waiting(self.engine, principal, run, fresh, base, "your answer counted; others must answer too")
        return None

    async def _elicit(
        self,
        ctx: ServerRequestContext[Any, Any],
        principal: Principal,
        run: RunRecord,
        opened: list[InterruptRecord],
        voters: dict[str, list[str]],
        base: str,
    ) -> types.CallToolResult | None:
        """Ask for each open interrupt in turn (handshake era); a result ends the call."""
        for record in opened:
            form = elicitation(record, voters.get(record.interrupt_id, ()))
            answer = await ctx.session.elicit_form(
                form.message, form.requested_schema, related_request_id=ctx.request_id
            )
            ended = await self._answer(principal, run, record, answer, base)
            if ended is not None:
                return ended
        return None


def storable(value: Any, what: str) -> None:
    """Refuse, as invalid params, what a REST body could not carry either.

    The same limits as the host's body reader: nesting deeper than :data:`MAX_JSON_DEPTH`, and
    numbers JSON's reader there refuses (integers outside 64 bits), which the store cannot write.
    """
    if too_deep(value, MAX_JSON_DEPTH):
        raise MCPError(
            types.INVALID_PARAMS,
            f"{what} nest arrays and objects more than {MAX_JSON_DEPTH} levels deep",
            {"maxDepth": MAX_JSON_DEPTH},
        )
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise MCPError(types.INVALID_PARAMS, f"{what} hold a value JSON cannot carry here: {exc}") from None


def error_result(exc: BridgeError) -> types.CallToolResult:
    """A refused answer or run as a tool error carrying the OpenWOP envelope."""
    body = exc.envelope()
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body))], structured_content=body, is_error=True
    )


def cancelled(record: InterruptRecord) -> types.CallToolResult:
    """The call's end when its user cancelled an interrupt's form."""
    body = {"runId": record.run_id, "interruptId": record.interrupt_id, "status": "cancelled"}
    text = f"Cancelled {record.kind} {record.interrupt_id} of run {record.run_id}."
    return types.CallToolResult(
        content=[types.TextContent(text=text), types.TextContent(text=json.dumps(body))],
        structured_content=body,
        is_error=True,
    )


class McpTransport:
    """The SDK's server over one engine: its low-level ``Server``, sealing codec, session manager and ASGI app."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        service = McpService(engine)
        self.server: Server[Any] = Server(
            NAME,
            version="1",
            instructions="Each tool runs an OpenWOP workflow; people may be asked to approve or answer.",
            cache_hints={"tools/list": CacheHint(ttl_ms=60_000, scope="private")},
            on_list_tools=service.list_tools,
            on_call_tool=service.call_tool,
        )
        self.codec = DerivedKeyCodec(engine)
        security = RequestStateSecurity(codec=self.codec, ttl=STATE_TTL_S)
        self.server.middleware.append(ReloadUnknownKeys(self.codec))
        self.server.middleware.append(RequestStateBoundary(security, default_audience=NAME))
        # The host checks Host headers itself (TrustedHosts); the SDK's own check would refuse a public URL.
        self.manager = StreamableHTTPSessionManager(
            app=self.server, security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self.app: ASGIApp = StreamableHTTPASGIApp(self.manager)

    async def run(self, ready: asyncio.Event, stopping: asyncio.Event) -> None:
        """Keep the session manager running until ``stopping`` is set."""
        async with self.manager.run():
            ready.set()
            await stopping.wait()
