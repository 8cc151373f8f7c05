"""Protocol adapters: AG-UI (``adapters.agui``) and LangGraph (``adapters.langgraph``).

Each adapter imports :mod:`bridge` and never the other adapter.
"""
