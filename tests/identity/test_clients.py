"""Third-party clients carrying a provider-issued bearer token against ``serve --identity-config``:
LangGraph's ``langgraph_sdk``, the ``a2a-sdk`` client, the ``mcp`` client and the OpenWOP v2 SDK."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.client import ClientCallContext
from a2a.types import Message, Role, SendMessageRequest, TaskState
from google.protobuf import json_format, struct_pb2
from langgraph_sdk import get_client
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.identity.provider import OpenIdProvider, issuer_config
from tests.server import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SDK_DIR = ROOT / ".venv" / "openwop-client-v2"
DRIVER = ROOT / "tests" / "sdk_v2_driver.py"
APPROVAL = "demo-expense-approval"
WORKER = "runs:create runs:read workflows:read interrupts:read"


@pytest.fixture(scope="module")
def server(provider: OpenIdProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("identity-clients")
    identity = folder / "identity.json"
    identity.write_text(json.dumps({"issuers": [issuer_config(provider)]}))
    with ServerProcess(folder / "serve.db", ["--identity-config", str(identity)]) as started:
        yield started


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_langgraph_sdk_creates_and_reads_a_run_with_a_token(
    provider: OpenIdProvider, server: ServerProcess
) -> None:
    client = get_client(url=f"{server.url}/langgraph", api_key=None, headers=_bearer(provider.token("service", WORKER)))
    thread = await client.threads.create(metadata={"ticket": "OIDC-1"})
    waiting = await client.runs.wait(thread["thread_id"], APPROVAL, input={})
    [interrupt] = waiting["__interrupt__"]
    shown = await client.threads.get(thread["thread_id"])
    assert shown["status"] == "interrupted"
    assert [i["id"] for items in shown["interrupts"].values() for i in items] == [interrupt["id"]]
    [run] = await client.runs.list(thread["thread_id"])
    assert (await client.runs.get(thread["thread_id"], run["run_id"]))["run_id"] == run["run_id"]
    # Without the token the same client is refused.
    anonymous = get_client(url=f"{server.url}/langgraph", api_key=None)
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await anonymous.threads.get(thread["thread_id"])
    assert refused.value.response.status_code == 401


class _Token(CredentialService):
    """The provider's token for every scheme the card names."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(self, security_scheme_name: str, context: ClientCallContext | None) -> str | None:
        return self.token


async def test_a2a_sdk_sends_a_message_with_a_token(provider: OpenIdProvider, server: ServerProcess) -> None:
    token = provider.token("service", WORKER)
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(
            card, interceptors=[AuthInterceptor(_Token(token))]
        )
        msg = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER)
        msg.metadata.CopyFrom(json_format.ParseDict({"openwop": {"skillId": APPROVAL}}, struct_pb2.Struct()))
        events = [e async for e in client.send_message(SendMessageRequest(message=msg))]
        assert len(events) == 1 and events[0].HasField("task")
        task = events[0].task
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        run = httpx.get(f"{server.url}/v1/runs/{task.id}", headers=_bearer(token))
        assert run.status_code == 200 and run.json()["status"] == "waiting-approval", run.text


async def test_mcp_client_lists_and_calls_tools_with_a_token(provider: OpenIdProvider, server: ServerProcess) -> None:
    token = provider.token("service", WORKER)
    http = httpx2.AsyncClient(headers=_bearer(token), timeout=30)
    async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
        names = [t.name for t in (await client.session.list_tools()).tools]
        assert APPROVAL in names
        called = await client.session.call_tool(APPROVAL, {})
        # A client without elicitation is told where the approval waits; the run is the token's to read.
        assert isinstance(called, types.CallToolResult) and called.structured_content is not None, called
        assert called.structured_content["status"] == "waiting"
        run = httpx.get(called.structured_content["runUrl"], headers=_bearer(token))
        assert run.status_code == 200 and run.json()["status"] == "waiting-approval", run.text


async def _run_driver(url: str, token: str, call: dict[str, Any]) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(DRIVER), str(SDK_DIR), url, token, json.dumps(call),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    doc: dict[str, Any] = json.loads(out)
    assert doc["version"].startswith("2."), doc
    return doc


async def test_openwop_v2_sdk_creates_and_reads_a_run_with_a_token(
    provider: OpenIdProvider, server: ServerProcess
) -> None:
    assert (SDK_DIR / "openwop_client").is_dir(), "run ./scripts/test (it installs openwop-client 2.x there)"
    token = provider.token("service", WORKER)
    create = {"op": "runs_create", "body": "CreateRunRequest", "bodyArgs": {"workflowId": APPROVAL}}
    created = await _run_driver(server.url, token, create)
    assert created["type"] == "CreateRunResponse", created
    run_id = created["value"]["runId"]
    read = await _run_driver(server.url, token, {"op": "runs_get", "args": [run_id]})
    assert read["type"] == "RunSnapshot", read
    assert (read["value"]["runId"], read["value"]["status"]) == (run_id, "waiting-approval"), read
    refused = await _run_driver(server.url, "not-a-token", {"op": "runs_get", "args": [run_id]})
    assert (refused["wopError"]["status"], refused["wopError"]["error"]) == (401, "unauthenticated")


async def test_the_a2a_card_declares_the_provider_as_an_openid_connect_scheme(
    provider: OpenIdProvider, server: ServerProcess
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
    schemes = dict(card.security_schemes)
    assert schemes["oidc"].open_id_connect_security_scheme.open_id_connect_url == (
        f"{provider.issuer}/.well-known/openid-configuration"
    )
    # Either credential is enough: an API key, or the provider's token.
    assert schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert [sorted(r.schemes) for r in card.security_requirements] == [["bearer"], ["oidc"]]
    # The URL it names is the provider's discovery document.
    assert httpx.get(schemes["oidc"].open_id_connect_security_scheme.open_id_connect_url).json()["issuer"] == (
        provider.issuer
    )
