"""Fixtures of the web tests: the served UI, a REST client on it, and a fresh Chromium page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page

from openwop_bridge import Engine
from tests.browser import browser_page, ui_server


@pytest.fixture
async def site(engine: Engine) -> AsyncIterator[str]:
    """The bridge with its web UI on real uvicorn (a module may serve something else under this name)."""
    async with ui_server(engine) as url:
        yield url


@pytest.fixture
async def api(site: str) -> AsyncIterator[httpx.AsyncClient]:
    """A REST client on ``site``."""
    async with httpx.AsyncClient(base_url=site, timeout=10) as client:
        yield client


@pytest.fixture
async def page(site: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A Chromium page with a fresh profile, its screenshot saved under the test's name."""
    async with browser_page(tmp_path / "chromium-profile", request.node.name) as opened:
        yield opened
