"""Where the A2A routes live and the ``a2a`` block of discovery: no SDK import, so serving starts without it."""

from __future__ import annotations

from typing import Any

#: The path of the JSON-RPC endpoint, and of the public agent card (the SDK's ``AGENT_CARD_WELL_KNOWN_PATH``).
RPC_PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"


def a2a_facet(base_url: str) -> dict[str, Any]:
    """The ``a2a`` block of ``/.well-known/openwop``.

    The document is a v1.1 one, so the block has the v1 capabilities schema's shape
    (``supported``, ``agentCardUrl`` and the flags); ``streaming`` and
    ``pushNotifications`` match the card, and ``durableTasks`` is true because a task
    is its run, read back from the store after any disconnect.
    """
    return {
        "a2a": {
            "supported": True,
            "agentCardUrl": base_url + CARD_PATH,
            "streaming": True,
            "pushNotifications": False,
            "durableTasks": True,
        }
    }
