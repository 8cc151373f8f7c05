"""``openwop-bridge serve --graph ID=module:attr``: serve compiled graphs as workflows."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from openwop_bridge import ValidationError
from openwop_bridge.host import ServerBuild


def load_object(target: str) -> Any:
    """Import ``module:attr.path``; a factory (callable without ``invoke``) is called."""
    module_name, colon, attr = target.partition(":")
    if not colon or not module_name or not attr:
        raise ValidationError(f"--graph target must be module:attr, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValidationError(f"cannot load graph {target!r}: {exc}") from exc
    if callable(obj) and not hasattr(obj, "ainvoke"):
        obj = obj()
    if not hasattr(obj, "ainvoke") or not hasattr(obj, "aget_state"):
        raise ValidationError(f"{target!r} is not a compiled LangGraph graph")
    return obj


def install(build: ServerBuild) -> None:
    """Register every ``--graph ID=module:attr`` as a workflow."""
    specs = build.claim("graph") or []
    if not specs:
        return
    from openwop_bridge.langgraph.workflows import GraphWorkflows  # LangGraph loads only when a graph is served

    graphs = GraphWorkflows(build.engine, db=build.db)
    for spec in specs:
        workflow_id, sep, target = spec.partition("=")
        if not sep or not workflow_id:
            raise ValidationError(f"--graph expects ID=module:attr, got {spec!r}")
        graphs.add(workflow_id, load_object(target), description=f"LangGraph graph {target}")
    build.shutdown.append(graphs.close)
