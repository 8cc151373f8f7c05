"""The official v2 discovery scenarios about what the document advertises (and does not), on real uvicorn.

Each test names its scenario (``conformance/src/scenarios/<id>.test.ts`` in openwop/openwop). The
scenarios gated on a family or block this host does not advertise are checked here for that
absence: the suite records them ``inapplicable`` (or ``blocked`` for a seam), never a failure.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from openwop_bridge.spec import v2 as spec
from tests.host.v2_scenario import V2, create, enc, events, h, wait_status

DISCOVERY = "/.well-known/openwop"
#: ``spec/v2/profiles.json`` (openwop/openwop at 0f13b519), each profile's predicate over the document.
PROFILES = {
    "openwop-discovery-core": {"families": [], "metadata": ["protocolVersions", "preferredVersion"]},
    "openwop-core-standard": {"families": ["interrupt", "replay", "webhooks", "idempotency", "eventLog"]},
    "openwop-conformance-seams-v2": {"families": [], "metadata": ["conformance"]},
}
#: Scenario → what gates it, none of which this host advertises.
GATED = {
    "v2-negotiation-authenticated": ("a2a", "mcp", "conformance"),
    "v2-negotiation-decided-emitted": ("a2a", "mcp", "conformance"),
    "v2-minimum-version-refused": ("a2a", "mcp", "conformance"),
    "v2-min-client-version": ("minClientVersion",),
    "v2-v1-events-translated": ("conformance",),
    "v2-pinned-run-disposition": ("conformance",),
    "v2-run-fork-prefix": ("replay",),
    "v2-run-fork-ancestry": ("replay", "multiAgent"),
    "v2-bound-id-kinds (deliveryId, effectId legs)": ("idempotency",),
}
BOUND_ID = re.compile(r"[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}")


async def _doc(http: httpx.AsyncClient) -> dict[str, Any]:
    resp = await http.get(DISCOVERY, headers=V2)
    assert resp.status_code == 200
    doc: dict[str, Any] = resp.json()
    return doc


def _record(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("status"), str)


def _derives(doc: dict[str, Any], predicate: dict[str, list[str]]) -> bool:
    families, metadata = predicate.get("families", []), predicate.get("metadata", [])
    return all(_record(doc.get(f)) for f in families) and all(m in doc for m in metadata)


async def test_v2_gated_scenarios_find_nothing_advertised(live: tuple[str, httpx.AsyncClient]) -> None:
    """The gated scenarios' gates: no a2a/mcp facet, no ``conformance`` seams block, no ``minClientVersion``,
    no ``replay``, ``multiAgent`` or ``idempotency`` family (``webhooks`` is served: tests/host/test_webhooks.py)."""
    _, http = live
    doc = await _doc(http)
    advertised = {scenario: [g for g in gates if g in doc] for scenario, gates in GATED.items()}
    assert advertised == {scenario: [] for scenario in GATED}


async def test_v2_legacy_profiles_absent(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-legacy-profiles-absent: no root ``profiles[]``; neither facet is advertised, so no ``-legacy`` id can be."""
    _, http = live
    doc = await _doc(http)
    assert "profiles" not in doc and "a2a" not in doc and "mcp" not in doc


async def test_v2_no_transport_advertisement(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-no-transport-advertisement: no ``supportedTransports``, no ``grpc``; the document validates."""
    _, http = live
    doc = await _doc(http)
    assert "supportedTransports" not in doc and "grpc" not in doc
    assert spec.problems("capabilities.schema.json", doc) == []
    assert spec.problems("capabilities.schema.json", {**doc, "supportedTransports": ["rest"]}) != []


async def test_v2_profiles_derived_only(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-profiles-derived-only: no root ``profiles[]``; every advertised family a profile names is a record;
    discovery-core derives true (core-standard and the seams profile do not: their families are not all here)."""
    _, http = live
    doc = await _doc(http)
    assert "profiles" not in doc
    for predicate in PROFILES.values():
        assert all(_record(doc[f]) for f in predicate.get("families", []) if f in doc)
    assert {name: _derives(doc, p) for name, p in PROFILES.items()} == {
        "openwop-discovery-core": True,
        "openwop-core-standard": False,
        "openwop-conformance-seams-v2": False,
    }


async def test_v2_implementation_informational(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-implementation-informational: the served ``implementation`` validates, so would its ``url``; the
    object stays closed (an unknown key fails)."""
    _, http = live
    doc = await _doc(http)
    served = doc["implementation"]
    assert set(served) <= {"name", "version", "vendor", "url"} and served["name"] == "openwop-bridge"
    root = {"protocolVersions": ["2.0"], "preferredVersion": "2.0"}
    assert spec.problems("capabilities.schema.json", {**root, "implementation": served}) == []
    with_url = {**served, "url": "https://example.org"}
    assert spec.problems("capabilities.schema.json", {**root, "implementation": with_url}) == []
    homepage = {"name": "x", "homepage": "https://example.org"}
    assert spec.problems("capabilities.schema.json", {**root, "implementation": homepage}) != []


async def test_v2_bound_id_kinds_interrupt_id(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-bound-id-kinds, the ``interruptId`` leg (gated on ``interrupt``, which is advertised): the id a
    suspension puts on the wire is tenant-bound, in the run's tenant, and the snapshot names the same one."""
    _, http = live
    assert _record((await _doc(http))["interrupt"])
    run_id = await create(http, "conformance-approval")
    await wait_status(http, run_id, ("waiting-approval",))
    log = await events(http, run_id)
    [suspended] = [e for e in log if e["type"] == "node.suspended"]
    assert BOUND_ID.fullmatch(suspended["payload"]["interruptId"])
    assert suspended["payload"]["interruptId"].split("/")[0] == run_id.split("/")[0]
    snap = (await http.get(f"/runs/{enc(run_id)}", headers=h())).json()
    assert snap["interrupt"]["interruptId"] == suspended["payload"]["interruptId"]
