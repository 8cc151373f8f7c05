"""Spans carry the OpenWOP interrupt attributes; logs can be JSON lines."""

from __future__ import annotations

import json
import logging

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bridge import Engine
from bridge.runtime import telemetry
from tests.helpers import ADMIN, settle

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
