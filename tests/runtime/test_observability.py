"""Spans carry the OpenWOP interrupt attributes; logs can be JSON lines."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from openwop_bridge import Engine
from openwop_bridge.notify.worker import Settled
from openwop_bridge.runtime import telemetry
from tests.helpers import ADMIN, settle
from tests.notify.host import SIGNING_SECRET, gate, notify_host

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def _sdk() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    telemetry.tracer = trace.get_tracer("openwop-bridge")


async def test_spans_around_runs_nodes_and_interrupts(engine: Engine) -> None:
    _EXPORTER.clear()
    run = await engine.create_run(ADMIN, "conformance-approval")
    await settle(engine, run.run_id)
    await engine.resolve(ADMIN, {"action": "accept"}, run_id=run.run_id, node_id="gate")
    await settle(engine, run.run_id)
    spans = _EXPORTER.get_finished_spans()
    names = {s.name for s in spans}
    assert {"openwop.run", "openwop.node", "openwop.interrupt.request", "openwop.interrupt.resolve"} <= names
    request = next(s for s in spans if s.name == "openwop.interrupt.request")
    attrs = dict(request.attributes or {})
    assert attrs["openwop.interrupt_kind"] == "approval"
    assert attrs["openwop.interrupt_id"].startswith("int_")
    assert attrs["openwop.interrupt_count"] == 1
    node = next(s for s in spans if s.name == "openwop.node")
    assert dict(node.attributes or {})["openwop.node_id"] == "gate"


def test_json_log_lines() -> None:
    record = logging.LogRecord("bridge.x", logging.WARNING, __file__, 1, "hello %s", ("world",), None)
    record.runId = "run_1"
    line = json.loads(telemetry.JsonFormatter().format(record))
    assert line["message"] == "hello world" and line["level"] == "warning" and line["runId"] == "run_1"


async def test_a_span_for_each_delivery_attempt_names_no_address(tmp_path: Path) -> None:
    _EXPORTER.clear()
    routes = [{"match": {"workflowId": "expense"}, "notify": ["alice", "email:finance-team@example.com"]}]
    async with notify_host(tmp_path, routes=routes, workflows=[gate("expense")], with_teams=False) as host:
        settled: list[Settled] = []
        host.engine.notify.on_settled(settled.append)
        host.smtp.rcpt_replies["finance-team@example.com"] = "550 5.1.1 No such user"
        _, record = await host.start_gate()
        await host.until(lambda: len(settled) == 3, "three notices settled")
    spans = [s for s in _EXPORTER.get_finished_spans() if s.name == "openwop.notification.deliver"]
    seen = sorted(
        (a["openwop.notification.channel"], a["openwop.notification.outcome"], a["openwop.notification.attempt"])
        for a in (dict(s.attributes or {}) for s in spans)
    )
    assert seen == [("email", "dead", 1), ("email", "delivered", 1), ("slack", "delivered", 1)]
    assert {dict(s.attributes or {})["openwop.interrupt_id"] for s in spans} == {record.interrupt_id}
    text = json.dumps([dict(s.attributes or {}) for s in spans])
    assert "@" not in text and "xoxb" not in text and SIGNING_SECRET not in text
