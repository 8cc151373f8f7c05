"""A tool-calling agent whose e-mails a person approves (or edits) before they are sent.

    ./scripts/serve --port 8001 --db ./openwop-bridge-graphs.db --graph mailer=examples.tool_agent:build
    .venv/bin/python examples/agui_terminal.py --url http://127.0.0.1:8001 --key owb_dev_... --workflow mailer

``create_agent`` with ``HumanInTheLoopMiddleware`` (``per_call`` mode): each gated
tool call becomes an OpenWOP ``approval`` of that call, shown to AG-UI clients as
the streamed tool call plus a ``tool_call`` interrupt whose ``editedArgs`` default
to the model's arguments. The chat model is scripted, so the example runs offline.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from openwop_bridge.langgraph.scripted import ScriptedChatModel

SENT: list[dict[str, str]] = []


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an e-mail."""
    SENT.append({"to": to, "subject": subject, "body": body})
    return f"sent '{subject}' to {to}"


def build() -> Any:
    """The compiled agent graph."""
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                content="I will send the announcement.",
                tool_calls=[
                    {
                        "id": "call_announce",
                        "name": "send_email",
                        "args": {
                            "to": "customers@example.com",
                            "subject": "Version 2.0",
                            "body": "Version 2.0 ships today.",
                        },
                    }
                ],
            ),
            "The announcement is on its way.",
        ]
    )
    return create_agent(
        model,
        tools=[send_email],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, interrupt_mode="per_call")],
    )
