"""How one node activation ends.

:func:`run_node` runs a node type's coroutine on its context and classifies
the ending — completed, failed, suspended, cancelled or diverged from the
run it replays — as an :class:`Outcome`, the only thing the executor needs to
advance the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openwop_bridge.core.errors import BridgeError, InterruptCancelledError, NodeError, ReplayDivergedError
from openwop_bridge.runtime.activation import Suspend
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.nodes.base import NodeResult, NodeType
from openwop_bridge.runtime.telemetry import node_span

log = logging.getLogger("openwop_bridge.runtime.executor")


@dataclass
class Outcome:
    """How one node activation ended."""

    ctx: NodeContext
    kind: str  # completed | failed | suspended | cancelled | diverged
    outputs: dict[str, Any] = field(default_factory=dict)
    route: list[str] | None = None
    error: dict[str, Any] | None = None
    waits: list[str] = field(default_factory=list)
    duration_ms: int = 0


def _error(exc: BridgeError | NodeError, *, always_details: bool = False) -> dict[str, Any]:
    err: dict[str, Any] = {"code": exc.code, "message": exc.message or exc.code}
    if exc.details or always_details:
        err["details"] = exc.details or {}
    return err


async def run_node(
    node_type: NodeType | None,
    ctx: NodeContext,
    now_ms: Callable[[], int],
    passthrough: tuple[type[BaseException], ...] = (),
) -> Outcome:
    """Run ``node_type`` on ``ctx`` and report how it ended.

    Raises only for cancellation and for ``passthrough`` errors (the store
    being unreachable), which are not the node's failure.
    """
    if node_type is None:
        error = {"code": "unsupported_node_type", "message": f"no node type {ctx.node.type_id!r} on this host"}
        return Outcome(ctx, "failed", error=error)
    started = now_ms()
    with node_span(ctx):
        try:
            result = await node_type.run(ctx)
        except Suspend as suspended:
            return Outcome(ctx, "suspended", waits=suspended.waits)
        except InterruptCancelledError as exc:
            return Outcome(ctx, "cancelled", error={"code": exc.code, "message": exc.message})
        except ReplayDivergedError as exc:
            return Outcome(ctx, "diverged", error=_error(exc, always_details=True))
        except (NodeError, BridgeError) as exc:
            return Outcome(ctx, "failed", error=_error(exc))
        except asyncio.CancelledError:
            raise
        except passthrough:
            raise
        except Exception as exc:
            log.exception("node %s of run %s raised", ctx.node_id, ctx.run_id)
            return Outcome(ctx, "failed", error={"code": "node_failed", "message": f"{type(exc).__name__}: {exc}"})
    duration = now_ms() - started
    if isinstance(result, NodeResult):
        route = list(result.route) if result.route is not None else None
        return Outcome(ctx, "completed", outputs=dict(result.outputs), route=route, duration_ms=duration)
    return Outcome(ctx, "completed", outputs=dict(result or {}), duration_ms=duration)
