"""The host with the LangGraph API on loopback, serving the demo workflows and LangGraph graphs too."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from openwop_bridge import Engine, KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.host.cli import demo_workflows
from openwop_bridge.langgraph_api import langgraph_routes
from tests.conftest import KEYS
from tests.server import uvicorn_server


@pytest.fixture
async def served(engine: Engine) -> AsyncIterator[str]:
    """The fixtures, the demo workflows and served LangGraph graphs behind the LangGraph API; yields its base URL."""
    from openwop_bridge.langgraph import GraphWorkflows
    from tests import graphs

    for workflow in demo_workflows():
        engine.add_workflow(workflow)
    async with GraphWorkflows(engine) as workflows:
        workflows.add("publish", graphs.approve_graph())
        workflows.add("fan", graphs.fan_out_graph())
        workflows.add("agent", graphs.hitl_per_call())
        workflows.add("batch", graphs.hitl_batched())
        workflows.add("strict-batch", graphs.hitl_agent("batched", edits=False))
        workflows.add("trip", graphs.conversation_graph())
        app = create_app(
            engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=0.2, extra_routes=langgraph_routes(engine)
        )
        async with uvicorn_server(app) as url:
            yield f"{url}/langgraph"
