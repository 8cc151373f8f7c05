"""A LangGraph-compatible API: LangGraph's own clients drive every workflow the host loaded.

``langgraph_routes(engine)`` serves LangGraph's thread/run API under
``/langgraph`` inside the OpenWOP host: ``get_client(url=".../langgraph",
api_key=...)`` from ``langgraph_sdk`` (or ``@langchain/langgraph-sdk``) lists the
workflows as assistants, starts them on threads, streams them, and answers their
interrupts with ``Command(resume=...)``. Keys, scopes and tenants are the host's.
"""

from __future__ import annotations

from openwop_bridge.langgraph_api.interrupts import answer_for, present, resume_entries
from openwop_bridge.langgraph_api.routes import langgraph_routes

__all__ = ["answer_for", "langgraph_routes", "present", "resume_entries"]
