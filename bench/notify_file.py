"""The notify file the notify figures run with: one person, e-mailed about every benchmark approval.

Written to the work folder and read back with :func:`~openwop_bridge.notify.config.load_notify_config`, as
``serve --notify-config`` reads it, so the figures run the checks and planner a deployment runs.
"""

from __future__ import annotations

import json
from typing import Any

from openwop_bridge.bench import workflows
from openwop_bridge.bench.harness import Bench
from openwop_bridge.notify.config import NotifyConfig, load_notify_config

#: The person told (also the principal the benchmark runs are created by).
PERSON = "bench"
ADDRESS = "bench@example.com"


def document(smtp_port: int) -> dict[str, Any]:
    """The notify file: ``PERSON`` with an address, a route matching every benchmark approval, the SMTP server
    on 127.0.0.1 at ``smtp_port``."""
    return {
        "publicBaseUrl": "http://127.0.0.1:8000",
        "people": {PERSON: {"email": ADDRESS}},
        "channels": {"email": {"smtp": f"smtp://127.0.0.1:{smtp_port}", "from": "Approvals <approvals@example.com>"}},
        "routes": [{"match": {"workflowId": workflows.APPROVAL, "kind": "approval"}, "notify": [PERSON]}],
    }


def load(bench: Bench, smtp_port: int, name: str = "notify.json") -> NotifyConfig:
    """Write :func:`document` into the work folder and read it back as ``serve`` does."""
    path = bench.path(name)
    path.write_text(json.dumps(document(smtp_port), indent=2))
    return load_notify_config(path)
