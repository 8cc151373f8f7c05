"""What the OpenAPI fuzz tests share: the schemathesis set-up, its time budget, and the host they fuzz.

Each fuzz module builds its schema with :func:`fuzz_schema` and takes its ``server`` and
``deadline`` fixtures from :func:`fuzz_fixtures`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis

from tests.server import ServerProcess

#: Random cases per operation (on top of the examples and boundary cases).
EXAMPLES = 5
#: The whole fuzz must finish within this (seconds); a slower host fails the test.
BUDGET_S = 90.0


def fuzz_schema(document: dict[str, Any]) -> Any:
    """The schemathesis schema for ``document``: deterministic, ``EXAMPLES`` random cases per operation."""
    schema = schemathesis.openapi.from_dict(document)
    schema.config.generation.update(max_examples=EXAMPLES, deterministic=True)
    schema.config.update(request_timeout=10)
    return schema


def fuzz_fixtures(folder: str, key: str) -> tuple[Any, Any]:
    """The module-scoped ``server`` (``openwop-bridge serve`` with ``key`` as an admin key, its
    database under ``folder``) and ``deadline`` (now plus ``BUDGET_S``) fixtures of one fuzz module."""

    @pytest.fixture(scope="module", name="server")
    def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
        with ServerProcess(tmp_path_factory.mktemp(folder) / "fuzz.db", ["--api-key", f"fuzz={key}+admin"]) as proc:
            yield proc

    @pytest.fixture(scope="module", name="deadline")
    def deadline() -> float:
        return time.monotonic() + BUDGET_S

    return server, deadline
