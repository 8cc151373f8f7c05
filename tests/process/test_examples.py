"""The examples in examples/ run as written (the documentation pages run their own blocks: tests/docs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import ServerProcess

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def _demo(db: Path, args: Sequence[str] = ()) -> Iterator[tuple[ServerProcess, str]]:
    """A served bridge and its dev key (printed at start-up), stopped afterwards."""
    server = ServerProcess(db, args).start()
    try:
        key = re.search(r"dev API key \(every scope, tenant 'default'\): (\S+)", server.output())
        assert key
        yield server, key.group(1)
    finally:
        server.stop()


def _example(args: Sequence[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run an example from the repository root, its output captured as text."""
    return subprocess.run(list(args), cwd=ROOT, capture_output=True, text=True, timeout=60, **kw)


def _script(name: str, server: ServerProcess, key: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<name>`` with bash against ``server``."""
    return _example(["bash", f"examples/{name}"], env={**os.environ, "BRIDGE_URL": server.url, "BRIDGE_KEY": key})


def test_python_api_example() -> None:
    out = _example([sys.executable, "examples/python_api.py"], check=True).stdout
    assert "published: Hello early adopters: 2.0 is out! | approved by alice" in out


def test_curl_approval_example(tmp_path: Path) -> None:
    with _demo(tmp_path / "demo.db") as (server, key):
        result = _script("approval_curl.sh", server, key)
    assert result.returncode == 0, result.stderr
    assert "status: completed" in result.stdout and "interrupt.resolved" in result.stdout


def test_curl_conversation_example(tmp_path: Path) -> None:
    with _demo(tmp_path / "demo.db") as (server, key):
        result = _script("conversation_curl.sh", server, key)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    prompts = ["Where are you travelling, and why?", "When, and for how long?", "How many travellers?"]
    assert [line[7:] for line in out.splitlines() if line.startswith("agent: ")] == [
        *prompts,
        "(conversation over)",
    ]
    assert "3   user: Two people, one room" in out
    assert "4  agent: Thanks! I have everything I need to book your trip." in out


def test_governed_release_example(tmp_path: Path) -> None:
    with _demo(tmp_path / "demo.db") as (server, key):
        result = _script("governed_release.sh", server, key)
    assert result.returncode == 0, result.stderr
    assert "bob   voted -> pending (2/3 accepted)" in result.stdout
    assert "status: completed | decided by carol | quorum:3-of-3" in result.stdout


def test_agui_terminal_client(tmp_path: Path) -> None:
    with _demo(tmp_path / "demo.db") as (server, key):
        base = [sys.executable, "examples/agui_terminal.py", "--url", server.url, "--key", key]
        approval = _example(
            [*base, "--workflow", "demo-expense-approval"],
            input="5\nWho approved the budget?\n1\nlooks fine\n",
        )
        assert approval.returncode == 0, approval.stderr
        assert "assistant: Your question is recorded" in approval.stdout and "done (success)" in approval.stdout
        chat = _example(
            [*base, "--workflow", "demo-conversation"],
            input="Lisbon\nMay\nTwo\n",
        )
        assert chat.returncode == 0, chat.stderr
        assert "assistant: How many travellers?" in chat.stdout
        assert '"replies": ["Lisbon", "May", "Two"]' in chat.stdout


def test_langgraph_examples_through_the_terminal_client(tmp_path: Path) -> None:
    with _demo(
        tmp_path / "g.db",
        ["--graph", "support=examples.supervisor_graph:build", "--graph", "mailer=examples.tool_agent:build"],
    ) as (server, key):
        base = [sys.executable, "examples/agui_terminal.py", "--url", server.url, "--key", key]
        # The supervisor is unsure (0.45): the person first names a route that does not
        # exist, is refused and asked again, then corrects the route to "tech".
        support = _example(
            [*base, "--workflow", "support", "--message", "My order is late"],
            input="sales\ntech\n",
        )
        assert support.returncode == 0, support.stderr + server.output()[-2000:]
        assert "[openwop:low-confidence]" in support.stdout and "45% sure" in support.stdout
        assert 'decided {"route": "billing"}' in support.stdout, "the person sees the decision to judge"
        assert support.stdout.count("[openwop:low-confidence]") == 2, "the refused answer is asked again"
        assert "refused (400 validation_error)" in support.stdout
        assert "assistant: Support engineering here" in support.stdout
        # The mailer's call is approved with an edited recipient.
        mailer = _example(
            [*base, "--workflow", "mailer"],
            input="y\n\n" + '{"to": "beta@example.com", "subject": "Version 2.0", '
            '"body": "Version 2.0 ships today."}\n',
        )
        assert mailer.returncode == 0, mailer.stderr + server.output()[-2000:]
        assert "(the agent wants to call send_email)" in mailer.stdout
        assert "sent 'Version 2.0' to beta@example.com" in mailer.stdout
        assert "assistant: The announcement is on its way." in mailer.stdout


def _wait_status(client: httpx.Client, run_id: str, wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        if run["status"] == wanted:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {wanted}: {run}")


def test_supervisor_graph_refuses_a_malformed_ratification(tmp_path: Path) -> None:
    with _demo(tmp_path / "s.db", ["--graph", "support=examples.supervisor_graph:build"]) as (server, key):
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}) as client:
            created = client.post(
                "/v1/runs",
                json={"workflowId": "support", "inputs": {"messages": [{"role": "user", "content": "Late order"}]}},
            )
            assert created.status_code == 201, created.text
            run_id = created.json()["runId"]
            waiting = _wait_status(client, run_id, "waiting-approval")
            answer_url = f"/v1/runs/{run_id}/interrupts/{waiting['interrupt']['nodeId']}"
            for bad in ("tech", {"route": "sales"}, {"route": 3}, {}):
                refused = client.post(answer_url, json={"resumeValue": bad})
                assert refused.status_code == 400, refused.text
                assert refused.json()["error"] == "validation_error"
                still = client.get(f"/v1/runs/{run_id}").json()
                assert still["status"] == "waiting-approval", still
                assert still["interrupt"]["interruptId"] == waiting["interrupt"]["interruptId"], "the question is open"
            accepted = client.post(answer_url, json={"resumeValue": {"route": "tech"}})
            assert accepted.status_code == 200, accepted.text
            done = _wait_status(client, run_id, "completed")
            assert done["outputs"]["graph"]["state"]["route"] == "tech", done


def test_quorum_links_guide(tmp_path: Path) -> None:
    """docs/guides/quorum-links.md: its bash block, run against a served demo, prints its text block."""
    page = (ROOT / "docs" / "guides" / "quorum-links.md").read_text("utf-8")
    script = page.split("```bash\n", 1)[1].split("```", 1)[0]
    expected = page.split("```text\n", 1)[1].split("```", 1)[0]
    with _demo(tmp_path / "demo.db") as (server, key):
        script = script.replace("http://127.0.0.1:8000", server.url)
        result = _example(["bash", "-euo", "pipefail", "-c", script], env={**os.environ, "BRIDGE_KEY": key})
    assert result.returncode == 0, result.stderr
    assert [line.rstrip() for line in result.stdout.splitlines()] == expected.splitlines()
