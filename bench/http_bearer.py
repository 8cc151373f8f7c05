"""``http_roundtrip_bearer``: the ``http_roundtrip`` cycle with an identity provider's token, over the same with a key.

One ``serve`` has both an API key and an identity file naming a real OpenID provider
(npm ``oidc-provider``, the script tests/node/oidc_provider.mjs, started on 127.0.0.1;
Node.js and ``npm ci`` in tests/node are needed, else the figure is an error row). A
client gets one access token (a JWT, RS256) by the client credentials grant; then cycles
with the token and cycles with the key alternate, and the figure is the ratio of their
medians. A verified token is remembered until its ``exp``, so after the first request
the token's cost is a cache look-up: the target is ≤ 1.15.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from openwop_bridge.bench import workflows
from openwop_bridge.bench.harness import Bench, alternate
from openwop_bridge.bench.http import ApprovalClient
from openwop_bridge.bench.results import Result, Target, median
from openwop_bridge.bench.servers import Server, bridge_command

NAME = "http_roundtrip_bearer"
TARGET = Target("<=", 1.15)
#: The folder of the provider's script and its ``node_modules`` (a source checkout's tests/node).
NODE_DIR = Path(__file__).resolve().parents[1] / "tests" / "node"
AUDIENCE = "urn:openwop-bridge:bench"
SCOPE = "runs:create runs:read interrupts:read approvals:respond"
#: The provider's client (the client credentials grant); its tokens last 50 minutes.
CLIENT_ID, CLIENT_SECRET = "bench", "bench-secret-0123"
CLIENT = {
    "client_id": CLIENT_ID,
    "client_secret": CLIENT_SECRET,
    "ttl": 3000,
    "claims": {"preferred_username": "bench"},
}


@contextlib.asynccontextmanager
async def provider(bench: Bench) -> AsyncIterator[str]:
    """The OpenID provider on 127.0.0.1 until the block ends; yields its issuer URL."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("Node.js is needed for this figure (the OpenID provider is npm oidc-provider)")
    if not (NODE_DIR / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError(f"run `npm ci` in {NODE_DIR} (a source checkout) to install oidc-provider")
    config = {"audience": AUDIENCE, "scope": SCOPE, "clients": [CLIENT]}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OIDC_TEST_CONFIG": json.dumps(config)}
    proc = await asyncio.create_subprocess_exec(
        node, "oidc_provider.mjs", cwd=NODE_DIR, env=env, start_new_session=True,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        async with asyncio.timeout(60):
            while not (line := (await proc.stdout.readline()).decode()).startswith("OIDC_PROVIDER_READY "):
                if not line:
                    raise RuntimeError("the OpenID provider exited:\n" + "".join(seen))
                seen.append(line)
        yield line.split()[1]
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()


async def access_token(issuer: str) -> str:
    """An access token for :data:`AUDIENCE` by the client credentials grant."""
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(
            f"{issuer}/token",
            data={"grant_type": "client_credentials", "scope": SCOPE, "resource": AUDIENCE},
            auth=(CLIENT_ID, CLIENT_SECRET),
        )
    answer.raise_for_status()
    token: str = answer.json()["access_token"]
    return token


def identity_file(bench: Bench, issuer: str) -> Path:
    """The identity file naming the provider, its tokens in the bench's tenant."""
    path = bench.path("identity.json")
    entry = {"issuer": issuer, "lane": "oauth2", "audience": AUDIENCE, "defaultTenant": bench.tenant}
    path.write_text(json.dumps({"issuers": [entry]}))
    return path


async def run(bench: Bench, wanted: frozenset[str]) -> list[Result]:
    """Alternate cycles with the token and with the key on one server; the ratio of their medians."""
    n = bench.scale(500, 40)
    warmup = bench.scale(30, 5)
    async with provider(bench) as issuer:
        folder = workflows.write(bench.path("workflows"))
        extra = ["--identity-config", str(identity_file(bench, issuer))]
        command = bridge_command(str(bench.path("http-bearer.db")), folder, bench.key_spec, extra)
        server = Server("http-bearer", command, bench.path("http-bearer.log"))
        await server.start()
        try:
            bearer = ApprovalClient(bench, server.port, {"Authorization": f"Bearer {await access_token(issuer)}"})
            key = ApprovalClient(bench, server.port)
            bench.progress.say("http", f"{warmup} warm-up + {n} cycles with a token and with a key, alternating")
            try:
                tokens, keys = await alternate(
                    bench, "http", bearer.cycle, key.cycle, n=n, warmup=warmup, labels=("token", "key")
                )
            finally:
                await bearer.close()
                await key.close()
        finally:
            await server.stop()
    with_token, with_key = median(tokens), median(keys)
    assert with_token is not None and with_key is not None
    note = (
        f"http_roundtrip cycle with a provider's token {with_token * 1000:.2f} ms, with an API key "
        f"{with_key * 1000:.2f} ms (medians, alternated, one server, SQLite)"
    )
    return [Result(NAME, "x", with_token / with_key, n=n, target=TARGET, note=note)]
