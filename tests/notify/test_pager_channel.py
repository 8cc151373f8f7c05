"""A channel from outside the package: a pager, registered in the process or through the entry point of a
distribution of its own, and configured through the notify file, delivers, retries and dead-letters like the
bridge's own channels."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openwop_bridge import Engine
from openwop_bridge.core.notices import POLICY_CHANNEL, DeliveryOutcome, Notice, RetryPolicy
from openwop_bridge.notify.channel_types import (
    GROUP,
    ChannelType,
    channel_names,
    channel_type,
    register_channel,
    unregister_channel,
)
from openwop_bridge.notify.config import ConfigModel, NotifyConfigError, parse_notify_config
from openwop_bridge.notify.install import ChannelSetup
from openwop_bridge.notify.links import NoticeLinks
from openwop_bridge.notify.worker import Settled
from openwop_bridge.runtime.config import EngineConfig
from tests.helpers import events
from tests.notify.host import gate, notify_host
from tests.server import uvicorn_server

# Runs again on PostgreSQL with BRIDGE_TEST_STORE=postgres (scripts/test's second pass).
pytestmark = pytest.mark.engine_store


class PagerSection(ConfigModel):
    """``channels.pager``: where pages are posted."""

    url: str
    timeout_ms: int = Field(default=5_000, gt=0)


class PagerSender:
    """Posts ``{to, text, link}`` for each notice; ``2xx`` delivered, ``5xx`` retried, anything else dead."""

    name = "pager"

    def __init__(self, section: PagerSection, links: NoticeLinks) -> None:
        self._section = section
        self._links = links

    async def deliver(self, notice: Notice) -> DeliveryOutcome:
        record = await self._links.open_interrupt(notice)
        if record is None:
            return DeliveryOutcome("delivered", "interrupt_closed")
        content = self._links.content(record, notice.payload, None)
        page = {"to": notice.payload["address"], "text": content.subject, "link": content.link}
        try:
            async with httpx.AsyncClient(timeout=self._section.timeout_ms / 1000) as client:
                response = await client.post(self._section.url, json=page)
        except httpx.HTTPError:
            return DeliveryOutcome.retry("pager_unreachable")
        if response.is_success:
            return DeliveryOutcome.delivered()
        reason = f"pager_http_{response.status_code}"
        return DeliveryOutcome.retry(reason) if response.status_code >= 500 else DeliveryOutcome.dead(reason)


def _check(section: PagerSection, address: str) -> str | None:
    return None if address.isalnum() else f"{address!r} is not a pager id"


def _build(setup: ChannelSetup, section: PagerSection) -> PagerSender:
    return PagerSender(section, setup.links)


PAGER = ChannelType(
    name="pager",
    config=PagerSection,
    build=_build,
    timeout_ms=lambda section: int(section.timeout_ms),
    prefix="pager",
    check_address=_check,
)


@pytest.fixture(params=["registered", "entry point"])
def pager(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The pager offered through :func:`register_channel`, or through the entry point of a distribution installed
    on ``sys.path`` (a ``dist-info`` naming this module's :data:`PAGER`), as a package of its own would offer it."""
    if request.param == "registered":
        register_channel(PAGER)
    else:
        found = tmp_path / "site" / "pager_channel-0.1.dist-info"
        found.mkdir(parents=True)
        (found / "METADATA").write_text("Metadata-Version: 2.1\nName: pager-channel\nVersion: 0.1\n")
        (found / "entry_points.txt").write_text(f"[{GROUP}]\npager = {__name__}:PAGER\n")
        monkeypatch.syspath_prepend(str(found.parent))
    yield
    unregister_channel("pager")


@dataclass
class Receiver:
    """A pager's endpoint on loopback: fails the first ``failing`` pages with 503, then takes them."""

    failing: int = 0
    pages: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0

    async def receive(self, request: Request) -> Response:
        if self.refused < self.failing:
            self.refused += 1
            return Response(status_code=503)
        self.pages.append(await request.json())
        return Response(status_code=200)


@contextlib.asynccontextmanager
async def receiver(failing: int) -> AsyncIterator[tuple[Receiver, str]]:
    found = Receiver(failing)
    async with uvicorn_server(Starlette(routes=[Route("/page", found.receive, methods=["POST"])])) as url:
        yield found, f"{url}/page"


#: Quick retries, so that a dead letter takes three attempts and well under a second of backoff.
QUICK = EngineConfig(notify_retry=RetryPolicy(base_ms=20, max_attempts=3, max_ms=100))


async def _reported(engine: Engine, run_id: str, event_type: str) -> None:
    """Wait for the run event an outcome is reported with (appended after the outcome is recorded)."""
    for _ in range(500):
        if await events(engine, run_id, event_type):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {event_type} event")


def _file(channels: dict[str, Any], notify: list[str]) -> dict[str, Any]:
    return {"publicBaseUrl": "http://127.0.0.1:9", "channels": channels, "routes": [{"notify": notify}]}


def test_the_bridge_s_own_channels_are_registered_by_entry_point(pager: None) -> None:
    assert {"email", "slack", "teams", "pager"} <= set(channel_names())
    email = channel_type("email")
    assert email is not None and (email.name, email.prefix) == ("email", "email")


def test_the_notify_file_configures_a_registered_channel_and_checks_its_targets(pager: None) -> None:
    config = parse_notify_config(_file({"pager": {"url": "http://127.0.0.1:9/page"}}, ["pager:ops"]), environ={})
    assert isinstance(config.channels.pager, PagerSection)
    with pytest.raises(NotifyConfigError, match=r"routes\[0\]\.notify\[0\]: 'on-call' is not a pager id"):
        parse_notify_config(_file({"pager": {"url": "http://x"}}, ["pager:on-call"]), environ={})
    with pytest.raises(NotifyConfigError, match=r"routes\[0\]\.notify\[0\]: no channels\.pager is configured"):
        parse_notify_config(_file({}, ["pager:ops"]), environ={})
    with pytest.raises(NotifyConfigError, match=r"channels\.pager\.url: Field required"):
        parse_notify_config(_file({"pager": {}}, []), environ={})


def test_a_channel_nobody_registered_is_refused() -> None:
    assert "pager" not in channel_names()
    with pytest.raises(NotifyConfigError, match=r"channels\.pager: Extra inputs are not permitted"):
        parse_notify_config(_file({"pager": {"url": "http://x"}}, []), environ={})
    with pytest.raises(NotifyConfigError, match=r"routes\[0\]\.notify\[0\]: 'pager:ops' is not a person, role:NAME"):
        parse_notify_config(_file({}, ["pager:ops"]), environ={})


async def test_a_page_the_receiver_fails_first_is_retried_and_delivered(pager: None, tmp_path: Path) -> None:
    async with receiver(failing=1) as (pages, url):
        routes = [{"match": {"workflowId": "expense"}, "notify": ["pager:ops"]}]
        channels = {"pager": {"url": url}}
        async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], channels=channels) as host:
            settled: list[Settled] = []
            host.engine.notify.on_settled(settled.append)
            run_id, record = await host.start_gate()
            await host.until(lambda: len(pages.pages) == 1, "the page, on its second attempt")
            await host.until(lambda: any(s.status == "delivered" for s in settled), "its outcome recorded")
            await _reported(host.engine, run_id, "notification.sent")
            ((page,),) = [pages.pages]
            assert page["to"] == "ops" and page["text"] == "[Approval] Approve expense report EXP-1042"
            assert page["link"].startswith(f"{host.url}/v1/interrupts/")
            assert [(s.notice.channel, s.status, s.notice.attempt) for s in settled] == [
                ("pager", "retry", 1),
                ("pager", "delivered", 2),
            ]
            (sent,) = await events(host.engine, run_id, "notification.sent")
            assert sent["payload"] == {
                "noticeId": settled[0].notice.notice_id,
                "channel": "pager",
                "recipient": "pager:ops",
                "attempt": 2,
                "interruptId": record.interrupt_id,
            }
            state = await host.engine.notify.delivery_state([record.interrupt_id])
            (entry,) = state[record.interrupt_id]["notifications"]["recipients"]
            assert (entry["channel"], entry["state"], entry["attempts"]) == ("pager", "delivered", 2)


async def test_a_page_the_receiver_always_fails_is_a_dead_letter_and_its_policy_applies(
    pager: None, tmp_path: Path
) -> None:
    async with receiver(failing=1_000) as (pages, url):
        routes = [{"match": {"workflowId": "expense"}, "notify": ["pager:ops"], "onUndeliverable": "fail"}]
        channels = {"pager": {"url": url}}
        async with notify_host(
            tmp_path, routes=routes, workflows=[gate("expense")], channels=channels, config=QUICK
        ) as host:
            settled: list[Settled] = []
            host.engine.notify.on_settled(settled.append)
            run_id, record = await host.start_gate()
            await host.until(lambda: any(s.status == "dead" for s in settled), "the dead letter")
            await host.until(lambda: any(s.notice.channel == POLICY_CHANNEL for s in settled), "the policy applied")
            await _reported(host.engine, run_id, "notification.failed")
            assert pages.refused == 3 and pages.pages == []
            assert [(s.status, s.notice.attempt) for s in settled if s.notice.channel == "pager"] == [
                ("retry", 1),
                ("retry", 2),
                ("dead", 3),
            ]
            (letter,) = await host.engine.notify.dead_letters("pager", "pager:ops", "default", limit=10)
            assert (letter.attempts, letter.reason, letter.interrupt_id) == (3, "pager_http_503", record.interrupt_id)
            (failed,) = await events(host.engine, run_id, "notification.failed")
            assert (failed["payload"]["channel"], failed["payload"]["reason"]) == ("pager", "pager_http_503")
            closed = await host.engine.interrupt_record(record.interrupt_id)
            assert closed is not None and not closed.open, "onUndeliverable 'fail' closed the gate"
            assert closed.resolution is not None and closed.resolution["resumeValue"]["reason"] == "undeliverable"
