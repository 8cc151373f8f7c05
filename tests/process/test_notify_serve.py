"""``serve --notify-config`` as the guide runs it: the SMTP debugging server, the bridge, a mail with a link."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.server import ServerProcess, free_port, wait_for_status

pytestmark = pytest.mark.slow

KEY = "notify-key-0001"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/v1/interrupts/[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+)")


@contextmanager
def smtp_debugging_server(port: int, log: Path) -> Iterator[Path]:
    """``python -m aiosmtpd -n -l 127.0.0.1:PORT``: prints every mail it receives (to ``log``)."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{port}"], stdout=out, stderr=out
        )
        try:
            yield log
        finally:
            proc.terminate()
            proc.wait(10)


def _notify_file(tmp_path: Path, smtp_port: int, bridge_port: int) -> Path:
    path = tmp_path / "notify.json"
    path.write_text(
        json.dumps(
            {
                "publicBaseUrl": f"http://127.0.0.1:{bridge_port}",
                "people": {"ops": {"email": "ops@example.com"}},
                "channels": {"email": {"smtp": f"smtp://127.0.0.1:{smtp_port}", "from": "Approvals <a@example.com>"}},
                "routes": [{"match": {"kind": "approval"}, "notify": ["ops"]}],
            }
        )
    )
    return path


def _wait_for_link(log: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = LINK.findall(log.read_text()) if log.exists() else []
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no mail with a link arrived:\n{log.read_text() if log.exists() else ''}")


def _serve(tmp_path: Path, notify: Path, port: int) -> ServerProcess:
    args = ["--notify-config", str(notify), "--api-key", f"ops={KEY}", "--notify-retry-base-ms", "100"]
    return ServerProcess(tmp_path / "serve.db", args, port=port)


def test_the_guides_two_commands_deliver_a_mail_whose_link_answers_as_the_person(tmp_path: Path) -> None:
    smtp_port, port = free_port(), free_port()
    notify = _notify_file(tmp_path, smtp_port, port)
    with smtp_debugging_server(smtp_port, tmp_path / "smtp.log") as log, _serve(tmp_path, notify, port) as server:
        h = {"Authorization": f"Bearer {KEY}"}
        r = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "demo-expense-approval"}, headers=h)
        assert r.status_code == 201, r.text
        link = _wait_for_link(log)
        assert "Approve expense report EXP-1042" in log.read_text()
        page = httpx.get(link, headers={"Accept": "text/html"})
        assert page.status_code == 200 and "Answers as" in page.text
        answered = httpx.post(link, json={"resumeValue": {"action": "accept"}})
        assert answered.status_code == 200, answered.text
        assert answered.json()["resumeValue"]["decidedBy"] == "ops"


def test_a_notice_queued_while_smtp_is_down_survives_kill_9(tmp_path: Path) -> None:
    smtp_port, port = free_port(), free_port()
    notify = _notify_file(tmp_path, smtp_port, port)
    server = _serve(tmp_path, notify, port).start()
    try:
        h = {"Authorization": f"Bearer {KEY}"}
        r = httpx.post(f"{server.url}/v1/runs", json={"workflowId": "demo-expense-approval"}, headers=h)
        assert r.status_code == 201, r.text
        wait_for_status(server.url, h, r.json()["runId"], ("waiting-approval", "waiting", "suspended"))
        server.kill9()  # the SMTP server is not up: the notice is queued, or mid-retry
    finally:
        server.stop()
    with smtp_debugging_server(smtp_port, tmp_path / "smtp.log") as log, _serve(tmp_path, notify, port):
        _wait_for_link(log)
        assert log.read_text().count("Subject: [Approval] Approve expense report EXP-1042") == 1
