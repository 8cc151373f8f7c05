"""The route tables are the one place a route is declared, and the scope each declares is the one enforced.

Every route the app serves (its own, no extra routes mounted) has exactly one declaration in the v1 or
v2 table, and every served declaration is a route. For each declared scope, table-driven: a key
holding every other host scope is refused with ``403 forbidden`` naming that scope, in the major's
envelope, whatever the path's ids and the body; a key holding the scope gets past the check.
"""

from __future__ import annotations

import re

import httpx
import pytest
from starlette.routing import Route

from openwop_bridge import Engine
from openwop_bridge.core.auth import SCOPES, KeyRing, make_key
from openwop_bridge.host.app import create_app
from openwop_bridge.host.http.routing import Operation
from openwop_bridge.host.v1.api import OPERATIONS as V1
from openwop_bridge.host.v2.api import OPERATIONS as V2

SERVED = [op for op in (*V1, *V2) if op.handler is not None]
SCOPED = [op for op in SERVED if op.scopes]


async def test_every_served_route_has_exactly_one_declaration(engine: Engine) -> None:
    app = create_app(engine, KeyRing([]), manage_engine=False)
    served = []
    for route in app.routes:
        assert isinstance(route, Route) and route.methods is not None, route
        for method in sorted(route.methods - {"HEAD"}):
            declared = [op for op in SERVED if op.method == method and op.route_path == route.path]
            assert len(declared) == 1, f"{method} {route.path}: {len(declared)} declarations"
            served.append(declared[0])
    assert sorted(op.endpoint for op in served) == sorted(op.endpoint for op in SERVED)


def test_each_table_declares_an_operation_once() -> None:
    for table in (V1, V2):
        endpoints = [op.endpoint for op in table]
        assert len(endpoints) == len(set(endpoints))


def _request(op: Operation, key: str) -> tuple[str, str, dict[str, str], bytes | None]:
    path = re.sub(r"\{\w+\}", "r-0", op.path)
    headers = {"Authorization": f"Bearer {key}"}
    if op in V2:
        headers["OpenWOP-Version"] = "2.0"
    body = None
    if op.method in ("POST", "PUT", "PATCH"):
        headers["Content-Type"] = "application/json"
        body = b"{}"
    return op.method, path, headers, body


@pytest.mark.parametrize("op", SCOPED, ids=[op.endpoint for op in SCOPED])
async def test_a_key_without_the_declared_scope_is_refused(engine: Engine, op: Operation) -> None:
    others = [s for s in SCOPES if s not in op.scopes]
    ring = KeyRing([make_key("key-others-0001", scopes=others), make_key("key-scoped-0001", scopes=[op.scopes[0]])])
    app = create_app(engine, ring, manage_engine=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
        method, path, headers, body = _request(op, "key-others-0001")
        refused = await c.request(method, path, headers=headers, content=body)
        method, path, headers, body = _request(op, "key-scoped-0001")
        admitted = await c.request(method, path, headers=headers, content=body)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == "forbidden"
    assert refused.json()["details"]["requiredScope"] in op.scopes
    assert admitted.status_code != 403 or admitted.json().get("details", {}).get("requiredScope") not in op.scopes
