"""Benchmarks: the bridge measured side by side with the tools users would pick instead.

``openwop-bridge bench [--quick] [--json PATH] [--only NAME]`` runs every
scenario (see :data:`~bench.harness.SCENARIOS`), printing progress on
stderr and a table on stdout. Peers (LangGraph, ``ag-ui-langgraph``) are
optional dependencies, imported only by the scenario that needs them. The
harness loads on first use of a name below, so the CLI can offer ``bench``
(its options come from :mod:`openwop_bridge.bench.options`) without loading it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openwop_bridge.bench.options import add_arguments

if TYPE_CHECKING:
    from openwop_bridge.bench.harness import SCENARIOS, main, run
    from openwop_bridge.bench.results import Result, Target

__all__ = ["SCENARIOS", "Result", "Target", "add_arguments", "main", "run"]
#: Each public name and the module that holds it, imported on first use.
_LAZY = {"SCENARIOS": "harness", "Result": "results", "Target": "results", "main": "harness", "run": "harness"}


def __getattr__(name: str) -> Any:
    """The harness's public names, imported on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"openwop_bridge.bench.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'bench' has no attribute {name!r}")
