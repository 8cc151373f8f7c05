"""The OpenAPI fragment documenting the LangGraph API (see :func:`openwop_bridge.langgraph_api.langgraph_routes`).

Bodies and answers are LangGraph's own shapes (``Thread``, ``ThreadState``,
``Run``, ``Assistant``); they are documented as JSON objects and arrays, with
the fields the bridge reads named in each summary. Errors are OpenWOP error
envelopes.
"""

from __future__ import annotations

from typing import Any

from openwop_bridge.host import error_responses

_OBJECT = {"type": "object"}
_ARRAY = {"type": "array", "items": _OBJECT}
_SSE = "LangGraph stream parts (SSE): metadata, values / updates / messages, then __interrupt__ or error"
#: (path under the prefix, method, summary, request body?, answer schema or None for SSE, error codes)
_ROUTES: list[tuple[str, str, str, bool, dict[str, Any] | None, tuple[int, ...]]] = [
    ("/info", "get", "What this server is", False, _OBJECT, ()),
    ("/assistants/search", "post", "One assistant per workflow ({graph_id?, limit?, offset?})", True, _ARRAY, (400,)),
    ("/assistants/{assistant_id}", "get", "One assistant (a workflow id)", False, _OBJECT, (404,)),
    ("/threads", "post", "Create a thread ({thread_id?, metadata?, if_exists?})", True, _OBJECT, (400, 409)),
    ("/threads/search", "post", "Search threads ({status?, metadata?, ids?, limit?, offset?})", True, _ARRAY, (400,)),
    ("/threads/{thread_id}", "get", "A thread, with its status and open interrupts", False, _OBJECT, (404,)),
    ("/threads/{thread_id}/state", "get", "The thread's state: values, tasks[].interrupts", False, _OBJECT, (404,)),
    ("/threads/{thread_id}/state", "post", "Set the next run's values ({values})", True, _OBJECT, (400, 404, 409)),
    ("/threads/{thread_id}/history", "post", "Each run's state, newest first ({limit?})", True, _ARRAY, (400, 404)),
    (
        "/threads/{thread_id}/runs",
        "post",
        "Start a run ({assistant_id, input}) or resume ({command: {resume}}) in the background",
        True,
        _OBJECT,
        (400, 404, 409),
    ),
    ("/threads/{thread_id}/runs", "get", "The thread's runs, newest first", False, _ARRAY, (404,)),
    (
        "/threads/{thread_id}/runs/stream",
        "post",
        "Start or resume a run and stream it ({stream_mode?, on_disconnect?})",
        True,
        None,
        (400, 404, 409),
    ),
    (
        "/threads/{thread_id}/runs/wait",
        "post",
        "Start or resume a run; its values once it ends or waits (__interrupt__, __error__)",
        True,
        _OBJECT,
        (400, 404, 409),
    ),
    ("/threads/{thread_id}/runs/{run_id}", "get", "One run", False, _OBJECT, (404,)),
    ("/threads/{thread_id}/runs/{run_id}/cancel", "post", "Cancel the run (?wait=1)", False, _OBJECT, (404, 409)),
    (
        "/threads/{thread_id}/runs/{run_id}/join",
        "get",
        "The run's values once it ends or waits",
        False,
        _OBJECT,
        (404,),
    ),
    (
        "/threads/{thread_id}/runs/{run_id}/stream",
        "get",
        "Rejoin the run's stream (?stream_mode=, ?cancel_on_disconnect=; Last-Event-ID replays what came after it)",
        False,
        None,
        (400, 404),
    ),
]


def _parameters(path: str) -> list[dict[str, Any]]:
    names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
    return [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names]


def _operation(summary: str, body: bool, answer: dict[str, Any] | None, codes: tuple[int, ...], path: str) -> Any:
    content = (
        {"text/event-stream": {"schema": {"type": "string"}}}
        if answer is None
        else {"application/json": {"schema": answer}}
    )
    op: dict[str, Any] = {
        "summary": summary,
        "tags": ["langgraph"],
        "responses": {
            "200": {"description": _SSE if answer is None else "OK", "content": content},
        },
    }
    if path == "/info":
        op["security"] = []  # public, as on LangGraph's own server
    else:
        op["responses"].update(
            error_responses(*sorted({*codes, 401, 403, 503}), text={409: "the thread's run is going, or none waits"})
        )
    if body:
        op["requestBody"] = {"required": False, "content": {"application/json": {"schema": _OBJECT}}}
    if _parameters(path):
        op["parameters"] = _parameters(path)
    return op


def langgraph_openapi(prefix: str = "/langgraph") -> dict[str, Any]:
    """The paths LangGraph clients call under ``prefix``."""
    paths: dict[str, dict[str, Any]] = {}
    for path, method, summary, body, answer, codes in _ROUTES:
        paths.setdefault(f"{prefix}{path}", {})[method] = _operation(summary, body, answer, codes, path)
    return {"paths": paths}
