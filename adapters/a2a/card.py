"""The agent card: one skill per workflow, the JSON-RPC interface, the bearer key and the identity providers."""

from __future__ import annotations

from collections.abc import Sequence

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from openwop_bridge import Engine, WorkflowDefinition
from openwop_bridge.a2a.discovery import RPC_PATH

#: The A2A protocol version served.
PROTOCOL_VERSION = "1.0"
SCHEME = "bearer"


def skill(workflow: WorkflowDefinition) -> AgentSkill:
    """A workflow as a skill: its id, name, description and tags (``workflow`` when it has none)."""
    meta = workflow.raw.get("metadata") or {}
    tags = [str(t) for t in meta.get("tags") or [] if str(t)] or ["workflow"]
    description = str(workflow.raw.get("description") or f"Runs the workflow {workflow.name}.")
    return AgentSkill(id=workflow.id, name=workflow.name or workflow.id, description=description, tags=tags)


def oidc_schemes(issuers: Sequence[str]) -> dict[str, SecurityScheme]:
    """An ``openIdConnect`` scheme per identity provider, named ``oidc`` (then ``oidc-2``, …), pointing at its
    OpenID discovery document."""
    return {
        "oidc" if i == 0 else f"oidc-{i + 1}": SecurityScheme(
            open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                open_id_connect_url=issuer.rstrip("/") + "/.well-known/openid-configuration",
                description=f"A bearer token issued by {issuer}",
            )
        )
        for i, issuer in enumerate(issuers)
    }


def agent_card(engine: Engine, base_url: str, version: str, issuers: Sequence[str] = ()) -> AgentCard:
    """The public card of the bridge at ``base_url`` (absolute, no trailing slash); any one of its schemes
    is enough: the API key, or a token of one of the identity providers ``issuers``."""
    schemes = {
        SCHEME: SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer", bearer_format="API key", description="An openwop-bridge API key"
            )
        ),
        **oidc_schemes(issuers),
    }
    return AgentCard(
        name="openwop-bridge",
        description="Workflows that pause for people: a waiting run is an input-required task.",
        version=version,
        provider=AgentProvider(organization="openwop-bridge", url=base_url),
        supported_interfaces=[
            AgentInterface(url=base_url + RPC_PATH, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=False),
        security_schemes=schemes,
        security_requirements=[SecurityRequirement(schemes={name: StringList()}) for name in schemes],
        default_input_modes=["application/json", "text/plain"],
        default_output_modes=["application/json"],
        skills=[skill(wf) for wf in engine.workflows()],
    )
