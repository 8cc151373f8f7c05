"""The AG-UI peer: a one-interrupt LangGraph graph served by ``ag-ui-langgraph`` on uvicorn.

``python -m openwop_bridge.bench.agui_peer --db PATH --port N`` serves ``POST /agent``
(``RunAgentInput`` in, AG-UI SSE out) and ``GET /agent/health``, the way the
package's documentation sets it up: ``LangGraphAgent`` over a compiled graph,
mounted with ``add_langgraph_fastapi_endpoint``. The agent is asked for the
structured interrupt outcome (``emit_interrupt_outcome=True``) so that it speaks
the same AG-UI 1.0 contract as the bridge: ``RUN_FINISHED {outcome: interrupt}``,
then a resume run with ``resume: [{interruptId, status, payload}]``.

The graph is the one of ``engine_roundtrip``
(:mod:`openwop_bridge.bench.langgraph_peer`); an async server needs the async
checkpointer, so it is ``AsyncSqliteSaver`` on a SQLite file (WAL, SQLite's
default ``synchronous=FULL``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib

PATH = "/agent"
HEALTH = f"{PATH}/health"


async def serve(db: str, port: int) -> None:
    """Serve the peer until the process is terminated."""
    import aiosqlite
    import uvicorn
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from openwop_bridge.bench.langgraph_peer import build_graph

    # Imported by name: fastapi comes with the bench extra, not with the type-checked dependencies.
    fastapi = importlib.import_module("fastapi")
    async with aiosqlite.connect(db) as conn:
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        agent = LangGraphAgent(name="bench", graph=build_graph(saver), emit_interrupt_outcome=True)
        app = fastapi.FastAPI()
        add_langgraph_fastapi_endpoint(app, agent, PATH)
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        await uvicorn.Server(config).serve()


def main() -> None:
    """Command line: ``--db PATH --port N``."""
    parser = argparse.ArgumentParser(prog="python -m openwop_bridge.bench.agui_peer")
    parser.add_argument("--db", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.db, args.port))


if __name__ == "__main__":
    main()
