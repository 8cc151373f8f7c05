"""The official v2 negotiation, discovery, header and error scenarios, leg by leg, on real uvicorn.

Each test names its scenario (``conformance/src/scenarios/<id>.test.ts`` in openwop/openwop).
Probes the scenarios send raw (no driver headers) are sent here with exactly the headers they name.
"""

from __future__ import annotations

import re

import httpx

from openwop_bridge.spec import v2 as spec
from tests.conftest import auth
from tests.host.test_v2_schemas import assert_envelope
from tests.host.v2_scenario import TERMINAL, V2, created_settled, enc, events, h, suspended, wait_status

VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
DISCOVERY = "/.well-known/openwop"
#: The parameterless GETs of ``spec/v2/path-manifest.json`` (openwop/openwop), less the discovery resource.
MANIFEST_GETS = (
    "/agents", "/agents/org-chart", "/agents/roster", "/audit/verify", "/content/pages", "/content/settings",
    "/host/effect-seams", "/host/events", "/openapi.json", "/prompts", "/runs", "/tools",
)  # fmt: skip
#: The rows of ``spec/v2/errors.json`` these probes can meet (``approval_rejected``: RFC 0223 §B, registry 2.43).
REGISTERED = {"not_found": 404, "validation_error": 400, "approval_rejected": 422}


def _major(resp: httpx.Response) -> str:
    return resp.headers["openwop-version"].split(".")[0]


async def test_v2_dual_stack_negotiation(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-dual-stack-negotiation: cross-major read, the unlisted major, the v1 path mismatch, the reported contract."""
    _, http = live
    versions = (await http.get(DISCOVERY, headers=V2)).json()["protocolVersions"]
    created = await http.post("/v1/runs", json={"workflowId": "conformance-noop"}, headers=auth("admin"))
    assert created.status_code == 201 and _major(created) == "1"
    v1_id = created.json()["runId"]
    read = await http.get(f"/runs/{enc(v1_id)}", headers=h())
    assert read.status_code == 200 and _major(read) == "2"
    # The scenario accepts the v1 id verbatim or ``<tenant>/<v1 id>``; neither is a v2 runId here, since
    # ids.schema.json has no ``_`` and the engine's ids have one: the bound id spells it ``-`` (ids.py).
    tenant, opaque = read.json()["runId"].split("/")
    assert opaque == v1_id.replace("_", "-") and tenant
    unlisted = await http.get(DISCOVERY, headers={"OpenWOP-Version": "9.0"})
    assert_envelope(unlisted, 406, "protocol_version_unsupported")
    assert sorted(unlisted.json()["details"]["protocolVersions"]) == sorted(versions)
    assert_envelope(await http.get("/v1/openapi.json", headers=V2), 400, "protocol_version_mismatch")
    bare_v1 = await http.get("/v1/openapi.json")
    named_v1 = await http.get("/v1/openapi.json", headers={"OpenWOP-Version": "1.0"})
    v2 = await http.get(DISCOVERY, headers=V2)
    assert (_major(bare_v1), _major(named_v1), _major(v2)) == ("1", "1", "2")
    for resp in (bare_v1, named_v1, v2):
        assert resp.headers["openwop-version"] in versions


async def test_v2_version_header_honored(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-version-header-honored: two majors advertised, so the header selects a different representation."""
    _, http = live
    bare = await http.get(DISCOVERY, headers=auth("admin"))
    asked = await http.get(DISCOVERY, headers=h())
    assert bare.status_code == 200 and asked.status_code == 200
    assert {v.split(".")[0] for v in bare.json()["protocolVersions"]} == {"1", "2"}
    assert asked.content != bare.content and _major(asked) == "2"


async def test_v2_well_known_one_resource(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-well-known-one-resource: one resource, two representations, equal ``protocolVersions``; no v1 remnants."""
    _, http = live
    v1 = await http.get(DISCOVERY)
    v2 = await http.get(DISCOVERY, headers=V2)
    assert v1.status_code == 200 and v2.status_code == 200
    assert sorted(v1.json()["protocolVersions"]) == sorted(v2.json()["protocolVersions"])
    assert v1.json() != v2.json()
    keys = set(v2.json())
    assert "capabilities" not in keys and "profiles" not in keys and not any(k.startswith("host.") for k in keys)
    assert "capabilities-etag" not in v2.headers


async def test_v2_preferred_version_default(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-preferred-version-default: ``preferredVersion`` is listed; a header-less GET is its representation."""
    _, http = live
    doc = (await http.get(DISCOVERY, headers=V2)).json()
    assert VERSION.fullmatch(doc["preferredVersion"]) and doc["preferredVersion"] in doc["protocolVersions"]
    bare = await http.get(DISCOVERY)
    assert bare.status_code == 200 and _major(bare) == doc["preferredVersion"].split(".")[0] == "1"
    body = bare.json()
    assert isinstance(body["protocolVersion"], str)
    assert isinstance(body["protocolVersions"], list) and isinstance(body["preferredVersion"], str)


async def test_v2_capabilities_root_closed(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-capabilities-root-closed: the v2 document validates; injected v1 remnants would not."""
    _, http = live
    doc = (await http.get(DISCOVERY, headers=V2)).json()
    assert spec.problems("capabilities.schema.json", doc) == []
    record = {"status": "stable", "since": "2.0", "witness": "claims-check"}
    for extra in ({"openwopConformanceUnknownRootKey": record}, {"host.replay": record}, {"capabilities": {}}):
        assert spec.problems("capabilities.schema.json", {**doc, **extra}) != []
    assert spec.problems("capabilities.schema.json", {**doc, "profiles": ["openwop-discovery-core"]}) != []


async def test_v2_client_version_header(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-client-version-header: no ``minClientVersion`` advertised, so no client is refused on version grounds."""
    _, http = live
    assert "minClientVersion" not in (await http.get(DISCOVERY, headers=V2)).json()
    for value in (None, "0.0.1", "not-a-version", "1", "01.0", "1.0-rc.1"):
        headers = dict(V2) if value is None else {**V2, "OpenWOP-Client-Version": value}
        assert (await http.get(DISCOVERY, headers=headers)).status_code == 200, value


async def test_v2_header_scheme(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-header-scheme: no removed header family; ``OpenWOP-Version: 2.<minor>`` on every response."""
    _, http = live
    responses = [
        await http.get(DISCOVERY, headers=V2),
        await http.get("/runs/does-not-exist", headers=h()),
        await http.post("/runs", json={"workflowId": "conformance-noop"}, headers=h()),
    ]
    for resp in responses:
        names = [n.lower() for n in resp.headers]
        removed = ("capabilities-etag", "x-dedup", "x-force-engine-version")
        assert not [n for n in names if n.startswith(("x-openwop-", "x-pack-")) or n in removed]
        assert VERSION.fullmatch(resp.headers["openwop-version"]) and _major(resp) == "2"


async def test_v2_error_registry(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-error-registry: the bad request's envelope at its registered status, no retry timing in details,
    and the error codes a failing run carries are registered (``conformance-failure`` is not a fixture here,
    so a rejected gate is the failing run)."""
    _, http = live
    registered = REGISTERED
    bad = await http.get("/runs/does-not-exist", headers=h())
    assert bad.status_code >= 400 and spec.problems("error-envelope.schema.json", bad.json()) == []
    assert registered[bad.json()["error"]] == bad.status_code
    assert not [k for k in bad.json().get("details", {}) if k.lower().startswith("retryafter")]
    run_id = await suspended(http)
    await http.post(f"/runs/{enc(run_id)}/interrupts/gate", json={"resumeValue": {"action": "reject"}}, headers=h())
    snap = await wait_status(http, run_id, TERMINAL)
    codes = [snap["error"]["code"]]
    codes += [
        e["payload"]["error"]["code"] for e in await events(http, run_id) if e["type"] in ("run.failed", "node.failed")
    ]
    assert len(codes) == 3 and all(code in registered for code in codes), codes


async def test_v2_malformed_body_envelope_webhooks(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-malformed-body-envelope, the ``/webhooks`` leg: a body that is not JSON is a 400 envelope with the header."""
    _, http = live
    resp = await http.post("/webhooks", content=b"{", headers={**h(), "Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.headers["openwop-version"].startswith("2.")
    assert_envelope(resp, 400, "validation_error")


async def test_v2_unadvertised_operation_not_found(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-unadvertised-operation-not-found: ``prompts`` and ``content`` are not advertised, so 404 ``not_found``."""
    _, http = live
    doc = (await http.get(DISCOVERY, headers=V2)).json()
    assert "prompts" not in doc and "content" not in doc
    for path in ("/prompts", "/content/settings"):
        assert_envelope(await http.get(path, headers=h()), 404, "not_found")


async def test_v2_advertised_path_space_served(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-advertised-path-space-served: every parameterless v2 GET served under ``/v1`` is reachable under major 2."""
    _, http = live
    overstated, served = [], []
    for path in MANIFEST_GETS:
        if (await http.get(f"/v1{path}", headers=auth("admin"))).status_code == 404:
            continue
        (overstated if (await http.get(path, headers=h())).status_code == 404 else served).append(path)
    assert overstated == [] and served


async def test_v2_created_run_readable(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-created-run-readable: read and poll by the percent-encoded id; the create's links stay on this base."""
    url, http = live
    created = await http.post("/runs", json={"workflowId": "conformance-noop"}, headers=h())
    body = created.json()
    assert re.fullmatch(r"[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}", body["runId"])
    assert (await http.get(f"/runs/{enc(body['runId'])}", headers=h())).status_code == 200
    assert (await http.get(f"/runs/{enc(body['runId'])}/events/poll?timeout=1", headers=h())).status_code == 200
    for link in (body["eventsUrl"], body["statusUrl"]):
        same = (httpx.URL(link).scheme, httpx.URL(link).netloc) == (httpx.URL(url).scheme, httpx.URL(url).netloc)
        assert link.startswith("/") or same, link
    await created_settled(http)


async def test_v2_cors_preflight(live: tuple[str, httpx.AsyncClient]) -> None:
    """v2-cors-preflight is self-gated on a granted origin: this host grants none, so no preflight admits one."""
    _, http = live
    asked = {"Origin": "https://conformance.invalid", "Access-Control-Request-Method": "POST"}
    asked["Access-Control-Request-Headers"] = "authorization,content-type,idempotency-key,openwop-version"
    for path in ("/runs", "/runs/x/cancel", "/interrupts/x"):
        assert "access-control-allow-origin" not in (await http.options(path, headers=asked)).headers
