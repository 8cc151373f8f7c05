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
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

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


def call_and_validate(case: schemathesis.Case, url: str, headers: dict[str, str]) -> None:
    """Send ``case`` to the host at ``url`` and check its response against the document.

    Every check holds (no 5xx, a documented status, content type and body); a schema-valid
    request the document cannot mark as wrong (:func:`refusal_the_document_cannot_state`) may
    still be refused.
    """
    headers = _credentials(case, headers)
    if refusal_the_document_cannot_state(case) is None:
        case.call_and_validate(base_url=url, headers=headers)
        return
    response = case.call(base_url=url, headers=headers)
    case.validate_response(response, excluded_checks=[positive_data_acceptance])


def _credentials(case: schemathesis.Case, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` for ``case``, without the key when the case is negative data that left the key out.

    A negative case may drop the ``Authorization`` the document requires (its bearer scheme); adding
    the valid key back would make the request valid, and its acceptance would count as a failure.
    """
    meta = case.meta
    header = None if meta is None else meta.components.get(ParameterLocation.HEADER)
    left_out = not any(name.lower() == "authorization" for name in (case.headers or {}))
    if header is not None and header.mode == GenerationMode.NEGATIVE and left_out:
        return {name: value for name, value in headers.items() if name.lower() != "authorization"}
    return headers


def refusal_the_document_cannot_state(case: schemathesis.Case) -> str | None:
    """Why a schema-valid request may still be refused with a documented 400, else None.

    OpenAPI cannot tie a header to a body field (v2's ``OpenWOP-Dedup`` needs a ``scopeId``), nor
    say which strings are cursors this host issued (a ``cursor`` is opaque: one it did not issue
    is a 400 ``malformed cursor``), nor tie one query parameter to another or to the time of the
    request (the decision report's ``from`` must come before ``to``, or now, by at most 366 days;
    a delegation's ``until`` after its ``from`` and after now, by at most 90 days, and its delegate
    someone other than its delegator), nor say which passkey registrations answer a challenge it issued.
    """
    headers = {name.lower() for name in (case.headers or {})}
    body = case.body if isinstance(case.body, dict) else {}
    creates = case.method.upper() == "POST" and case.path == "/runs"
    if creates and "openwop-dedup" in headers and not isinstance(body.get("scopeId"), str):
        return "scopeId"
    if "cursor" in (case.query or {}):
        return "cursor"
    if case.path == "/v1/analytics/decisions" and {"from", "to"} & set(case.query or {}):
        return "window"
    if case.method.upper() == "POST" and case.path in ("/v1/delegations", "/delegations"):
        return "span"
    if case.method.upper() == "POST" and case.path == "/ui/api/passkeys":
        return "credential"  # a browser's answer to a challenge this host issued, which a document cannot name
    return None
