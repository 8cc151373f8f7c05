"""A snapshot carries the last turns of a message channel, with a count and a link to the rest:
``GET /v1/runs/{runId}/channels/{name}`` pages the whole channel. The v1 and v2 snapshots stay valid."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from openwop_bridge import Engine, Workflow, spec
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.spec import v2 as spec_v2
from tests.conftest import KEYS, auth
from tests.helpers import envelope, settle

SHOWN = 3


@pytest.fixture
async def paged(make_engine: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Engine]]:
    """An engine whose snapshots show the last ``SHOWN`` turns of a message channel, and a client."""
    engine: Engine = make_engine(EngineConfig(snapshot_messages=SHOWN), name="paged.db")
    wf = Workflow("chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hello", "turnCount": 3})
    wf.register(engine)
    await engine.start()
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=0.2)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
            yield c, engine
    finally:
        await engine.stop()


async def _finished_chat(client: httpx.AsyncClient, engine: Engine) -> str:
    r = await client.post("/v1/runs", json={"workflowId": "chat"}, headers=auth("admin"))
    run_id = str(r.json()["runId"])
    await settle(engine, run_id)
    for word in ("one", "two", "three"):
        said = await client.post(
            f"/v1/runs/{run_id}/interrupts/talk", json={"resumeValue": word}, headers=auth("admin")
        )
        assert said.status_code == 200, said.text
        await settle(engine, run_id)
    return run_id


async def test_the_snapshot_shows_the_last_turns_and_links_to_the_rest(
    paged: tuple[httpx.AsyncClient, Engine],
) -> None:
    client, engine = paged
    run_id = await _finished_chat(client, engine)
    run = await engine.store.load_run(run_id)
    assert run is not None
    whole = (await engine.channels(run))["transcript"]
    assert len(whole) == 8  # the opening, three prompts, three answers, the closing turn
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    assert not list(spec.validator("run-snapshot.schema.json").iter_errors(snap))
    assert snap["channels"]["transcript"] == whole[-SHOWN:]
    note = snap["channelPages"]["transcript"]
    assert note == {
        "total": 8,
        "shown": SHOWN,
        "from": 8 - SHOWN,
        "href": f"http://bridge.test/v1/runs/{run_id}/channels/transcript",
    }
    first = await client.get(note["href"], headers=auth("admin"))
    assert first.status_code == 200 and first.json()["items"] == whole and first.json()["total"] == 8
    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = (await client.get(note["href"], params={"offset": offset, "limit": 3}, headers=auth("admin"))).json()
        assert page["offset"] == offset and len(page["items"]) <= 3
        pages.extend(page["items"])
        offset = page.get("nextOffset")
    assert pages == whole


async def test_the_v2_snapshot_keeps_the_page_note_under_its_extension(
    paged: tuple[httpx.AsyncClient, Engine],
) -> None:
    client, engine = paged
    run_id = await _finished_chat(client, engine)
    runs = (await client.get("/runs", headers={**auth("admin"), "OpenWOP-Version": "2.0"})).json()
    snap = next(s for s in runs["runs"] if s["extensions"]["openwop-bridge.run"].get("channelPages"))
    assert spec_v2.problems("run-snapshot.schema.json", {k: v for k, v in snap.items() if k != "interrupt"}) == []
    assert len(snap["channels"]["transcript"]) == SHOWN
    assert snap["extensions"]["openwop-bridge.run"]["channelPages"]["transcript"]["total"] == 8
    assert run_id in snap["extensions"]["openwop-bridge.run"]["channelPages"]["transcript"]["href"]


async def test_a_short_channel_is_shown_whole_without_a_note(client: httpx.AsyncClient, engine: Engine) -> None:
    wf = Workflow("chat", channels={"transcript": {"reducer": "message", "schema": {"type": "array"}}})
    wf.node("talk", type_id="core.conversationGate", config={"initialPrompt": "Hello", "turnCount": 1})
    wf.register(engine)
    r = await client.post("/v1/runs", json={"workflowId": "chat"}, headers=auth("admin"))
    run_id = str(r.json()["runId"])
    await settle(engine, run_id)
    snap = (await client.get(f"/v1/runs/{run_id}", headers=auth("admin"))).json()
    assert len(snap["channels"]["transcript"]) == 2 and "channelPages" not in snap


async def test_channel_pages_are_refused_as_the_snapshot_is(paged: tuple[httpx.AsyncClient, Engine]) -> None:
    client, engine = paged
    run_id = await _finished_chat(client, engine)
    url = f"/v1/runs/{run_id}/channels/transcript"
    envelope(await client.get(f"/v1/runs/{run_id}/channels/nothing", headers=auth("admin")), 404, "not_found")
    envelope(await client.get(url, headers=auth("other")), 404, "run_not_found")
    envelope(await client.get(url), 401, "unauthenticated")
    for bad in ({"limit": "0"}, {"limit": "501"}, {"offset": "-1"}, {"offset": "x"}):
        envelope(await client.get(url, params=bad, headers=auth("admin")), 400, "validation_error")
    reader = await client.get(url, headers=auth("reader"))
    assert reader.status_code == 200 and reader.json()["total"] == 8
    beyond = (await client.get(url, params={"offset": 50}, headers=auth("admin"))).json()
    assert beyond["items"] == [] and beyond.get("nextOffset") is None
