"""Fixtures of the identity tests: real OpenID providers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.identity.provider import OpenIdProvider


@pytest.fixture(scope="module")
def provider() -> Iterator[OpenIdProvider]:
    """An OpenID provider for the module's tests."""
    started = OpenIdProvider()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def second_provider() -> Iterator[OpenIdProvider]:
    """Another provider, which the host does not trust."""
    started = OpenIdProvider()
    yield started
    started.stop()
