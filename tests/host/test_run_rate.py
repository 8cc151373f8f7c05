"""Run creation per key is bounded in rate: beyond it, 429 rate_limited with Retry-After, on every surface."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.server import ServerProcess

ALICE = "rate-key-alice"
BOB = "rate-key-bob01"


@pytest.mark.slow
def test_creating_runs_faster_than_the_rate_is_429_with_retry_after(tmp_path: Path) -> None:
    # 8 a minute: bursts of 2, then one every 7.5 s (slow enough that none comes back during the test).
    env = {"OPENWOP_BRIDGE_MAX_RUNS_PER_MINUTE": "8"}
    args = ["--api-key", f"alice={ALICE}+admin", "--api-key", f"bob={BOB}+admin"]
    with ServerProcess(tmp_path / "r.db", args, env=env) as server:
        alice = {"Authorization": f"Bearer {ALICE}"}
        body = {"workflowId": "demo-expense-approval", "inputs": {"pad": "p" * 1000}}
        codes = [httpx.post(f"{server.url}/v1/runs", headers=alice, json=body).status_code for _ in range(2)]
        assert codes == [201] * 2
        over = httpx.post(f"{server.url}/v1/runs", headers=alice, json=body)
        assert over.status_code == 429, over.text
        assert over.json()["error"] == "rate_limited"
        assert 1 <= int(over.headers["retry-after"]) <= 8
        v2 = httpx.post(f"{server.url}/runs", headers={**alice, "OpenWOP-Version": "2"}, json=body)
        assert v2.status_code == 429 and v2.json()["error"] == "rate_limited", v2.text
        assert int(v2.headers["retry-after"]) >= 1
        # Nothing was stored for the refused ones.
        listed = httpx.get(f"{server.url}/v1/runs", headers=alice, params={"limit": 100}).json()["runs"]
        assert len(listed) == 2
        # Another key has its own rate.
        bob = {"Authorization": f"Bearer {BOB}"}
        assert httpx.post(f"{server.url}/v1/runs", headers=bob, json=body).status_code == 201
