"""The AG-UI routes: ``agui_routes`` inside the OpenWOP host, ``mount_agui`` in any Starlette app.

Both load the AG-UI service (and with it the ``ag-ui-protocol`` models) with their
first request, so that a server pays for AG-UI only once somebody speaks it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openwop_bridge import Engine, WorkflowDefinition
from openwop_bridge.host import JSONResponse

if TYPE_CHECKING:
    from openwop_bridge.agui.endpoint import AguiService, Authenticate


class _Service:
    """The :class:`~openwop_bridge.agui.endpoint.AguiService` of a set of routes, built on first use."""

    def __init__(self, engine: Engine, authenticate: Authenticate | None) -> None:
        self.engine = engine
        self.authenticate = authenticate
        self._built: AguiService | None = None

    def __call__(self) -> AguiService:
        if self._built is None:
            from openwop_bridge.agui.endpoint import AguiService

            self._built = AguiService(self.engine, authenticate=self.authenticate)
        return self._built

    def capabilities(self, workflow: WorkflowDefinition) -> Response:
        """``GET …/capabilities``: the workflow's AG-UI ``AgentCapabilities``."""
        from openwop_bridge.agui.capabilities import agent_capabilities

        return JSONResponse(agent_capabilities(self.engine, workflow).model_dump(by_alias=True, mode="json"))


def agui_routes(engine: Engine, *, prefix: str = "/agui", authenticate: Authenticate | None = None) -> list[Route]:
    """Routes serving every loaded workflow as an AG-UI agent under ``prefix``."""
    service = _Service(engine, authenticate)

    async def run(request: Request) -> Response:
        return await service().run(request, request.path_params["workflow_id"])

    async def capabilities(request: Request) -> Response:
        service().principal(request).require("workflows:read")
        return service.capabilities(engine.workflow(request.path_params["workflow_id"]))

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
    service = _Service(engine, authenticate)

    async def run(request: Request) -> Response:
        return await service().run(request, workflow_id)

    async def capabilities(request: Request) -> Response:
        authenticate(request)
        return service.capabilities(engine.workflow(workflow_id))

    app.router.routes.append(Route(path, run, methods=["POST"]))
    app.router.routes.append(Route(f"{path.rstrip('/')}/capabilities", capabilities, methods=["GET"]))
