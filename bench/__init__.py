"""Benchmarks: the bridge measured side by side with the tools users would pick instead.

``openwop-bridge bench [--quick] [--json PATH] [--only NAME]`` runs every
scenario (see :data:`~bench.harness.SCENARIOS`), printing progress on
stderr and a table on stdout. Peers (LangGraph, ``ag-ui-langgraph``) are
optional dependencies, imported only by the scenario that needs them.
"""

from __future__ import annotations

from bench.harness import SCENARIOS, Result, Target, add_arguments, main, run

__all__ = ["SCENARIOS", "Result", "Target", "add_arguments", "main", "run"]
