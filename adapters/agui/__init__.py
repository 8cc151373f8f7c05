"""AG-UI adapter: every workflow the host loaded is an AG-UI 1.0 agent.

``agui_routes(engine)`` serves ``POST /agui/{workflowId}`` and
``GET /agui/{workflowId}/capabilities`` inside the OpenWOP host;
``mount_agui(app, engine, workflow_id, path=…)`` serves one workflow in any
Starlette app. Both use the host's API keys (or the ``authenticate`` callable
given), so answering an interrupt needs ``approvals:respond`` and the key's
principal is ``decidedBy``.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.agui.capabilities import agent_capabilities
from adapters.agui.endpoint import AguiService, Authenticate
from adapters.agui.mapping import interrupt_to_agui, normalize_request, resume_payload_to_value
from bridge import Engine
from bridge.host import JSONResponse


def agui_routes(engine: Engine, *, prefix: str = "/agui", authenticate: Authenticate | None = None) -> list[Route]:
    """Routes serving every loaded workflow as an AG-UI agent under ``prefix``."""
    service = AguiService(engine, authenticate=authenticate)

    async def run(request: Request) -> Response:
        return await service.run(request, request.path_params["workflow_id"])

    async def capabilities(request: Request) -> Response:
        service.principal(request).require("workflows:read")
        workflow = engine.workflow(request.path_params["workflow_id"])
        return JSONResponse(agent_capabilities(engine, workflow).model_dump(by_alias=True, mode="json"))

    return [
        Route(f"{prefix}/{{workflow_id}}", run, methods=["POST"]),
        Route(f"{prefix}/{{workflow_id}}/capabilities", capabilities, methods=["GET"]),
    ]


def mount_agui(
    app: Starlette, engine: Engine, workflow_id: str, *, path: str = "/agent", authenticate: Authenticate
) -> None:
    """Serve one workflow as an AG-UI agent at ``path`` (and ``path/capabilities``) in ``app``.

    The engine must be started by the app's lifespan (``async with engine`` or
    ``engine.start()``); ``authenticate`` maps a request to a principal.
    """
    service = AguiService(engine, authenticate=authenticate)

    async def run(request: Request) -> Response:
        return await service.run(request, workflow_id)

    async def capabilities(request: Request) -> Response:
        authenticate(request)
        return JSONResponse(
            agent_capabilities(engine, engine.workflow(workflow_id)).model_dump(by_alias=True, mode="json")
        )

    app.router.routes.append(Route(path, run, methods=["POST"]))
    app.router.routes.append(Route(f"{path.rstrip('/')}/capabilities", capabilities, methods=["GET"]))


__all__ = [
    "AguiService",
    "agent_capabilities",
    "agui_routes",
    "interrupt_to_agui",
    "mount_agui",
    "normalize_request",
    "resume_payload_to_value",
]
