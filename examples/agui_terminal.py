"""A terminal AG-UI client: talk to any workflow the bridge serves, answering its interrupts.

    ./scripts/serve                                   # note the dev key it prints
    .venv/bin/python examples/agui_terminal.py --key owb_dev_... --workflow demo-expense-approval
    .venv/bin/python examples/agui_terminal.py --key owb_dev_... --workflow demo-conversation

It streams the assistant's text, and when a run ends with interrupts it builds
each answer from the interrupt's ``responseSchema`` alone: a choice for
``oneOf`` alternatives, one prompt per property of an object, a line of text
otherwise. Then it resumes the thread with ``resume[]``; an answer the server
refuses (say, one that does not match the schema) is shown and asked again.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from typing import Any

import httpx


class Refused(Exception):
    """The server answered a request with an error envelope instead of a stream."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"{status} {body}")
        self.status = status
        try:
            envelope = json.loads(body)
        except json.JSONDecodeError:
            envelope = {}
        self.envelope: dict[str, Any] = envelope if isinstance(envelope, dict) else {}

    def explain(self) -> str:
        """One line for the error, then one per problem the server listed."""
        error = self.envelope.get("error", "error")
        lines = [f"refused ({self.status} {error}): {self.envelope.get('message', '')}"]
        problems = (self.envelope.get("details") or {}).get("problems") or []
        lines += [f"  - {problem}" for problem in problems]
        return "\n".join(lines)


def ask(prompt: str) -> str:
    """Read one line from the person (EOF ends the session)."""
    print(prompt, end="", flush=True)
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("\n(end of input)")
    return line.rstrip("\n")


def answer_for(schema: dict[str, Any], label: str = "") -> Any:
    """Build a value for a JSON Schema by asking the person."""
    if "const" in schema:
        return schema["const"]
    options = schema.get("oneOf") or schema.get("anyOf")
    if options:
        titles = [
            o.get("title") or o.get("properties", {}).get("action", {}).get("const") or f"option {i + 1}"
            for i, o in enumerate(options)
        ]
        if all(o.get("type") == "string" for o in options[:1]) and len(options) == 2 and "close" in titles[1]:
            text = ask(f"{label or 'Your reply'} (or /close): ")
            return {"operation": "close"} if text == "/close" else text
        for i, title in enumerate(titles, start=1):
            print(f"  {i}. {title}")
        while True:
            text = ask("Choose: ") or "1"
            if text.isdigit() and 1 <= int(text) <= len(options):
                return answer_for(options[int(text) - 1], label)
            print(f"  (a number from 1 to {len(options)})")
    if schema.get("type") == "object" and "properties" in schema:
        value: dict[str, Any] = {}
        for name, prop in schema["properties"].items():
            required = name in schema.get("required", [])
            if "const" in prop:
                value[name] = prop["const"]
                continue
            if not required and prop.get("type") not in ("boolean",):
                text = ask(f"{prop.get('title', name)} (optional, Enter to skip): ")
                if text:
                    value[name] = _coerce(prop, text)
                continue
            value[name] = answer_for(prop, prop.get("title", name))
        return value
    if schema.get("type") == "boolean":
        return ask(f"{label or 'Yes or no'} [y/n]: ").strip().lower().startswith("y")
    if "enum" in schema:
        return ask(f"{label} {schema['enum']}: ")
    text = ask(f"{label or 'Your answer'}: ")
    return _coerce(schema, text)


def _coerce(schema: dict[str, Any], text: str) -> Any:
    if schema.get("type") in ("integer", "number"):
        return int(text) if schema["type"] == "integer" else float(text)
    if schema.get("type") == "object" or ("default" in schema and not isinstance(schema.get("default"), str)):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    return text


def stream(client: httpx.Client, url: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """One AG-UI run: print text as it streams; return the RUN_FINISHED (or RUN_ERROR) event."""
    finished: dict[str, Any] = {}
    with client.stream("POST", url, json=body, headers={"Authorization": f"Bearer {key}"}) as response:
        if response.status_code != 200:
            response.read()
            raise Refused(response.status_code, response.text)
        roles: dict[str, str] = {}
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            kind = event["type"]
            if kind == "TEXT_MESSAGE_START":
                roles[event["messageId"]] = event.get("role", "assistant")
                if roles[event["messageId"]] == "assistant":
                    print("assistant: ", end="", flush=True)
            elif kind == "TEXT_MESSAGE_CONTENT" and roles.get(event["messageId"]) == "assistant":
                print(event["delta"], end="", flush=True)
            elif kind == "TEXT_MESSAGE_END" and roles.get(event["messageId"]) == "assistant":
                print()
            elif kind == "TOOL_CALL_START":
                print(f"(the agent wants to call {event['toolCallName']})")
            elif kind == "TOOL_CALL_RESULT":
                print(f"(tool result: {event['content']})")
            elif kind == "CUSTOM" and event.get("name") == "openwop.warning":
                print(f"(warning: {event['value'].get('message')})")
            elif kind in ("RUN_FINISHED", "RUN_ERROR"):
                finished = event
    return finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--key", required=True)
    parser.add_argument("--workflow", default="demo-expense-approval")
    parser.add_argument("--message", help="open the thread with this user message")
    args = parser.parse_args()
    endpoint = f"{args.url}/agui/{args.workflow}"
    thread = str(uuid.uuid4())
    resume: list[dict[str, Any]] | None = None
    interrupts: list[dict[str, Any]] = []
    messages = [{"id": str(uuid.uuid4()), "role": "user", "content": args.message}] if args.message else []
    with httpx.Client(timeout=None) as client:
        while True:
            body: dict[str, Any] = {
                "threadId": thread,
                "runId": str(uuid.uuid4()),
                "messages": messages,
                "protocolVersion": "1.0",
            }
            if resume:
                body["resume"] = resume
            try:
                finished = stream(client, endpoint, args.key, body)
            except Refused as refusal:
                # A refused answer leaves the interrupts open: show why and ask again.
                if not resume or refusal.status not in (400, 422):
                    raise SystemExit(refusal.explain()) from None
                print(refusal.explain())
            else:
                if finished.get("type") == "RUN_ERROR":
                    print(f"the run failed: {finished.get('code')}: {finished.get('message')}")
                    return
                outcome = finished.get("outcome") or {"type": "success"}
                if outcome["type"] != "interrupt":
                    print(f"done ({outcome['type']}): {json.dumps(finished.get('result'))}")
                    return
                interrupts = outcome["interrupts"]
            resume = []
            for interrupt in interrupts:
                print(f"\n[{interrupt['reason']}] {interrupt.get('message', '')}")
                votes = interrupt.get("metadata", {}).get("openwop", {}).get("votes")
                if votes:
                    print(f"  votes so far: {votes['accept']} of {votes['required']}")
                payload = answer_for(interrupt.get("responseSchema") or {})
                resume.append({"interruptId": interrupt["id"], "status": "resolved", "payload": payload})


if __name__ == "__main__":
    main()
