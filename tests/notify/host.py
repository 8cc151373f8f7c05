"""A bridge with a notify file, served on loopback with the link page, beside real receivers."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from openwop_bridge import Engine, SqliteStore, Workflow
from openwop_bridge.core.auth import SYSTEM, KeyRing
from openwop_bridge.core.records import InterruptRecord
from openwop_bridge.host import web
from openwop_bridge.host.app import create_app
from openwop_bridge.host.notifying import NotifySetup, install_notify
from openwop_bridge.notify.config import NotifyConfig, parse_notify_config
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.store.base import Store
from tests import pg
from tests.conftest import KEYS
from tests.helpers import settle
from tests.notify.receivers import SlackStandIn, SmtpRecorder, WebhookReceiver, slack_api, smtp_server, webhook_receiver
from tests.server import uvicorn_server

SIGNING_SECRET = "slack-signing-secret-for-tests"

PEOPLE: dict[str, Any] = {
    "alice": {"tenant": "default", "email": "alice@example.com", "slack": "U0ALICE", "roles": ["finance"]},
    "bob": {"tenant": "default", "email": "bob@example.com", "slack": "U0BOB", "roles": ["finance"]},
    "carol": {"tenant": "default", "email": "carol@example.com", "roles": ["director"]},
    "mallory": {"tenant": "other", "email": "mallory@example.com", "slack": "U0MALLORY", "roles": ["finance"]},
    "eve": {"tenant": "default", "slack": "U0EVE"},
}


@dataclass
class NotifyHost:
    """The engine, its served URL and client, the receivers, and what the notify file installed."""

    engine: Engine
    url: str
    client: httpx.AsyncClient
    smtp: SmtpRecorder
    slack: SlackStandIn
    teams: WebhookReceiver
    setup: NotifySetup
    config: NotifyConfig

    async def start_gate(self, workflow_id: str = "expense") -> tuple[str, InterruptRecord]:
        """Start a run of ``workflow_id`` and return it with the interrupt it waits on."""
        run = await self.engine.create_run(SYSTEM, workflow_id, tenant="default")
        await settle(self.engine, run.run_id)
        (record,) = await self.engine.run_interrupts(run.run_id, open_only=True)
        return run.run_id, record

    async def until(self, check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
        """Wait until ``check()`` holds (the outbox delivers off the request path)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not check():
            if loop.time() > deadline:
                raise AssertionError(f"never happened: {what}")
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def _store(tmp_path: Path) -> AsyncIterator[Store]:
    """SQLite, or a fresh PostgreSQL database with ``BRIDGE_TEST_STORE=postgres``."""
    if os.environ.get("BRIDGE_TEST_STORE", "sqlite") != "postgres":
        yield SqliteStore(tmp_path / "notify.db")
        return
    from openwop_bridge.store.postgres import PostgresStore

    with pg.fresh_database() as url:
        yield PostgresStore(url)


def gate(workflow_id: str, **config: Any) -> Workflow:
    """A workflow with one approval gate ``review`` (``config`` goes to the gate)."""
    wf = Workflow(workflow_id)
    wf.node(
        "review",
        type_id="core.approvalGate",
        config={
            "title": "Approve expense report EXP-1042",
            "description": "Team offsite, 3 nights, 4 people.",
            "actions": ["accept", "reject", "refine"],
            **config,
        },
    )
    return wf


@contextlib.asynccontextmanager
async def notify_host(
    tmp_path: Path,
    *,
    routes: list[dict[str, Any]],
    workflows: list[Workflow],
    channels: dict[str, Any] | None = None,
    people: dict[str, Any] | None = None,
    with_teams: bool = True,
    email_options: dict[str, Any] | None = None,
    config: EngineConfig | None = None,
    identity: dict[str, Any] | None = None,
) -> AsyncIterator[NotifyHost]:
    """A served bridge whose notify file sends e-mail, Slack and Teams notices to loopback receivers.

    ``identity``: an identity file; the host then takes its providers' tokens beside the keys, each
    person of the notify file who names a ``subject`` resolved as ``serve`` resolves them."""
    with smtp_server() as (smtp, smtp_port):
        async with (
            contextlib.AsyncExitStack() as stack,
            slack_api() as (slack, api_base),
            webhook_receiver() as (teams, teams_url),
        ):
            engine = Engine(await stack.enter_async_context(_store(tmp_path)), config=config)
            for wf in workflows:
                wf.register(engine)
            all_channels: dict[str, Any] = {
                "email": {
                    "smtp": f"smtp://127.0.0.1:{smtp_port}",
                    "from": "Approvals <approvals@example.com>",
                    **(email_options or {}),
                },
                "slack": {"token": "xoxb-test-token", "signingSecret": SIGNING_SECRET, "apiBase": api_base},
            }
            if with_teams:
                all_channels["teams"] = {"ops": {"url": teams_url}}
            all_channels.update(channels or {})
            everyone = PEOPLE if people is None else people
            ring = KeyRing(KEYS.values())
            extra: dict[str, Any] = {}
            if identity is not None:
                extra = await stack.enter_async_context(_identity(identity, everyone, all_channels, ring))
            app = create_app(
                engine,
                ring,
                manage_engine=False,
                link_page=web.link_page,
                extra_routes=web.web_routes(),
                keepalive_s=0.2,
                **extra,
            )
            await engine.start()
            try:
                async with uvicorn_server(app) as url:
                    notify_file = parse_notify_config(
                        {"publicBaseUrl": url, "people": everyone, "channels": all_channels, "routes": routes},
                        environ={},
                    )
                    setup = install_notify(engine, notify_file)
                    for route in setup.routes:
                        app.router.routes.append(route)
                    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                        yield NotifyHost(engine, url, client, smtp, slack, teams, setup, notify_file)
            finally:
                await engine.stop()


@contextlib.asynccontextmanager
async def _identity(
    document: dict[str, Any], people: dict[str, Any], channels: dict[str, Any], ring: KeyRing
) -> AsyncIterator[dict[str, Any]]:
    """The identity file's providers on ``ring``, as ``serve`` installs them: ``create_app``'s ``layers``
    and ``auth_lanes``, the verifier resolving the people who name a subject."""
    from starlette.middleware import Middleware

    from openwop_bridge.host.people import person_subjects
    from openwop_bridge.identity.config import parse_identity_config
    from openwop_bridge.identity.layer import BearerTokens, Identity, auth_lanes
    from openwop_bridge.identity.verifier import TokenVerifier

    config = parse_identity_config(document)
    named = person_subjects(parse_notify_config({"people": people, "channels": channels}, environ={}), config)
    found = Identity(config, TokenVerifier(config, people=named))
    ring.use_tokens(found.resolve)
    try:
        yield {"layers": [Middleware(BearerTokens, identity=found)], "auth_lanes": auth_lanes(config)}
    finally:
        await found.verifier.aclose()
