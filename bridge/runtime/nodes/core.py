"""``core.noop``, ``core.delay`` and ``core.interrupt``."""

from __future__ import annotations

from typing import Any

from openwop_bridge.core import kinds
from openwop_bridge.core.errors import NodeError, ValidationError
from openwop_bridge.core.workflow import NodeSpec, thaw
from openwop_bridge.runtime.context import NodeContext

MAX_DELAY_MS = 24 * 3600 * 1000


async def noop(ctx: NodeContext) -> dict[str, Any]:
    """Does nothing; passes its inputs through as outputs."""
    return dict(ctx.inputs)


async def delay(ctx: NodeContext) -> dict[str, Any]:
    """Waits ``delayMs`` (input or config) milliseconds; cancellable, and the wait survives a restart."""
    raw = ctx.inputs.get("delayMs", ctx.config.get("delayMs", 0))
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= MAX_DELAY_MS:
        raise NodeError(f"delayMs must be a number between 0 and {MAX_DELAY_MS}", code="validation_error")
    await ctx.sleep(int(raw))
    return {"delayedMs": int(raw)}


def interrupt_payload(config: dict[str, Any]) -> dict[str, Any]:
    """The InterruptPayload a ``core.interrupt`` node raises, from its config."""
    payload: dict[str, Any] = {"kind": config.get("kind"), "data": config.get("data", {})}
    for name in ("key", "timeoutMs", "resumeSchema"):
        if name in config:
            payload[name] = config[name]
    return payload


def check_interrupt(node: NodeSpec) -> list[str]:
    """The config must describe a valid interrupt payload."""
    try:
        kinds.normalize_payload(interrupt_payload(thaw(node.config)), "check")
    except ValidationError as exc:
        problems = (exc.details or {}).get("problems") or [exc.message]
        return [str(p) for p in problems]
    return []


async def interrupt(ctx: NodeContext) -> dict[str, Any]:
    """Raises the interrupt described by its config; outputs the resume value."""
    value = await ctx.interrupt(interrupt_payload(ctx.config))
    return {"resumeValue": value}
