"""No secret of an outbound URL reaches a log, at any level: a webhook URL's path and query (tokens) and the
same for any request the HTTP client logs (Teams Workflows URLs carry ``sig=``)."""

from __future__ import annotations

import logging

import httpx
import pytest

from openwop_bridge import Engine
from openwop_bridge.runtime.telemetry import configure_logging
from tests.host.test_webhooks import LOOPBACK, SECRET, fast_config, register
from tests.host.v2_scenario import suspended
from tests.host.webhook_receiver import bridge, receiver

TOKEN = "pathtoken-5f1d2c"
SIG = "sigvalue-9a8b7c"


async def test_a_delivery_logs_no_part_of_its_url_past_the_host(make_engine, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    caplog.set_level(logging.DEBUG)
    async with receiver() as rec, bridge(engine, LOOPBACK) as http:
        url = f"{rec.url}/hook/{TOKEN}?sig={SIG}"
        assert (await register(http, url, ["run.started"], secret=SECRET)).status_code == 201
        await suspended(http)
        await rec.wait(lambda: len(rec.got) == 1)
    outbound = [r for r in caplog.records if r.name.startswith(("httpx", "httpcore"))]
    assert outbound  # the client did log: what it logged is checked
    assert TOKEN not in caplog.text and SIG not in caplog.text


async def test_serve_logging_keeps_the_http_client_quiet_and_redacted(caplog: pytest.LogCaptureFixture) -> None:
    """``serve``'s logging at DEBUG: any request made with httpx (Teams, Slack, webhooks) names its host only."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("debug")
        root.addHandler(caplog.handler)  # configure_logging replaced the root's handlers
        assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING
        assert logging.getLogger("httpcore").getEffectiveLevel() >= logging.WARNING
        for name in ("httpx", "httpcore"):  # even a client logger set back to DEBUG writes no path or query
            caplog.set_level(logging.DEBUG, logger=name)
        async with receiver() as rec, httpx.AsyncClient() as client:
            await client.post(f"{rec.url}/workflows/{TOKEN}?api-version=1&sig={SIG}", json={})
        assert any("127.0.0.1" in r.getMessage() for r in caplog.records if r.name == "httpx")
        assert TOKEN not in caplog.text and SIG not in caplog.text
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
