"""The OpenAPI documents as served, recorded: a change to how they are built must not change what they say.

``tests/host/openapi/*.json`` hold the v1 document (bare, and as ``serve`` documents it with the web
pages and the default adapters' fragments) and the v2 document, as they stood before the route table
built them. Each is compared as parsed JSON (key order aside). A deliberate change to an operation
regenerates them::

    .venv/bin/python -m tests.host.test_openapi_snapshot
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from openwop_bridge import Engine
from openwop_bridge.a2a.openapi import a2a_openapi
from openwop_bridge.agui.openapi import agui_openapi
from openwop_bridge.core.auth import KeyRing
from openwop_bridge.host.app import create_app
from openwop_bridge.host.http.openapi import web_fragment
from openwop_bridge.host.v1.api import openapi_document
from openwop_bridge.host.v2.api import openapi_document as v2_document
from openwop_bridge.langgraph_api.openapi import langgraph_openapi
from tests.conftest import KEYS

HERE = Path(__file__).parent / "openapi"


def documents() -> dict[str, dict[str, Any]]:
    """Each recorded document by file name, built as the host builds it."""
    served = [web_fragment(), agui_openapi(), langgraph_openapi(), a2a_openapi()]
    return {
        "v1.json": openapi_document(),
        "v1-serve.json": openapi_document(served, link_page=True),
        "v2.json": v2_document(),
    }


@pytest.mark.parametrize("name", sorted(documents()))
def test_the_document_says_what_was_recorded(name: str) -> None:
    recorded = json.loads((HERE / name).read_text())
    assert orjson.loads(orjson.dumps(documents()[name])) == recorded


async def test_the_served_documents_are_the_recorded_ones(engine: Engine) -> None:
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
        v1 = await c.get("/v1/openapi.json")
        v2 = await c.get("/openapi.json", headers={"OpenWOP-Version": "2.0"})
    assert v1.status_code == 200 and v1.json() == json.loads((HERE / "v1.json").read_text())
    assert v2.status_code == 200 and v2.json() == json.loads((HERE / "v2.json").read_text())


if __name__ == "__main__":
    for file, document in documents().items():
        (HERE / file).write_text(json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
