"""Stream slots and the paced sender, on their own (the served behaviour is in test_stream_limits.py)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from openwop_bridge.core.auth import Principal
from openwop_bridge.core.errors import RateLimitedError
from openwop_bridge.host.http.streams import GuardedStream, StreamLimits, StreamSlots

ALICE = Principal(id="alice")
BOB = Principal(id="bob")


def test_a_key_and_a_run_hold_at_most_their_limits_and_get_places_back() -> None:
    slots = StreamSlots(StreamLimits(per_key=2, per_run=3, retry_after_s=7))
    held = [slots.take(ALICE, "run-1"), slots.take(ALICE, None)]
    with pytest.raises(RateLimitedError) as refused:
        slots.take(ALICE, "run-2")
    assert refused.value.retry_after_s == 7
    assert refused.value.details == {"limit": 2, "per": "key", "retryAfter": 7}
    held += [slots.take(BOB, "run-1"), slots.take(BOB, "run-1")]
    with pytest.raises(RateLimitedError) as full:
        slots.take(Principal(id="carol"), "run-1")
    assert full.value.details == {"limit": 3, "per": "run", "retryAfter": 7}
    held[0].release()
    held[0].release()  # a second release gives nothing more back
    assert slots.open_streams(ALICE) == 1
    slots.take(Principal(id="carol"), "run-1")
    with pytest.raises(RateLimitedError):
        slots.take(Principal(id="dave"), "run-1")


def test_the_same_name_in_another_tenant_is_another_key() -> None:
    slots = StreamSlots(StreamLimits(per_key=1))
    slots.take(Principal(id="alice", tenant="a"), None)
    slots.take(Principal(id="alice", tenant="b"), None)
    with pytest.raises(RateLimitedError):
        slots.take(Principal(id="alice", tenant="a"), None)


class _Chunks(Response):
    """A response sending each of ``parts`` as one body message."""

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts
        self.status_code = 200
        self.background = None
        self.init_headers({})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        for i, part in enumerate(self.parts):
            await send({"type": "http.response.body", "body": part, "more_body": i < len(self.parts) - 1})


async def test_the_body_goes_out_in_pieces_and_the_stream_waits_for_its_client_between_chunks() -> None:
    slots = StreamSlots(StreamLimits(buffer_bytes=10))
    slot = slots.take(ALICE, "run-1")
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    parts = [b"a" * 25, b"b" * 10, b"c" * 3]
    await GuardedStream(_Chunks(parts), slot, 10)({"type": "http"}, receive, send)
    bodies = [(m["body"], m["more_body"]) for m in sent if m["type"] == "http.response.body"]
    assert bodies == [
        (b"a" * 10, True),
        (b"a" * 10, True),
        (b"a" * 5, True),
        (b"", True),  # the client's turn: the next chunk is asked for once this one went
        (b"b" * 10, True),
        (b"", True),
        (b"c" * 3, False),
    ]
    assert slots.open_streams(ALICE) == 0


async def test_a_stream_that_fails_gives_its_place_back() -> None:
    slots = StreamSlots(StreamLimits())
    slot = slots.take(ALICE, "run-1")

    class Failing(_Chunks):
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            raise RuntimeError("boom")

    async def send(message: Message) -> None:
        pass

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    with pytest.raises(RuntimeError):
        await GuardedStream(Failing([]), slot, 10)({"type": "http"}, receive, send)
    assert slots.open_streams(ALICE) == 0
