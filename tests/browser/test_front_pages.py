"""The front door of a served host: ``GET /`` for people and for clients, and the API page at
``/docs/`` (Swagger UI from the package, under the pages' Content-Security-Policy) driven in
headless Chromium: it lists both documents' operations, takes the key, and calls the host."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from openwop_bridge.host.web.front import DOCS_CONTENT_SECURITY_POLICY
from openwop_bridge.host.web.pages import CONTENT_SECURITY_POLICY
from tests.browser import browser_page
from tests.server import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``openwop-bridge serve`` as the README starts it; yields its URL and dev key."""
    server = ServerProcess(tmp_path_factory.mktemp("front") / "front.db").start()
    try:
        key = re.search(r"dev API key \(every scope, tenant 'default'\): (\S+)", server.output())
        assert key, server.output()
        yield server.url, key.group(1)
    finally:
        server.stop()


def test_a_client_gets_a_json_index_of_the_host(served: tuple[str, str]) -> None:
    url, _ = served
    for accept in (None, "application/json", "*/*"):
        r = httpx.get(url + "/", headers={"Accept": accept} if accept else {})
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        body = r.json()
        assert body["name"] == "openwop-bridge" and body["links"]["apiDocs"] == "/docs/"
        for href in body["links"].values():
            assert httpx.get(url + href, follow_redirects=False).status_code == 200, href


def test_a_browser_gets_a_landing_page_linking_every_part(served: tuple[str, str]) -> None:
    url, _ = served
    r = httpx.get(url + "/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    for href in ("/ui/", "/docs/", "/.well-known/openwop", "/v1/openapi.json", "/openapi.json"):
        assert f'href="{href}"' in r.text


def test_the_api_page_and_its_assets_come_from_this_host(served: tuple[str, str]) -> None:
    url, _ = served
    page = httpx.get(url + "/docs/")
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    assert policy == DOCS_CONTENT_SECURITY_POLICY and "unsafe" not in policy
    assert "script-src 'self';" in policy and "connect-src 'self';" in policy
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and not [s for s in sources if s.startswith(("http:", "https:", "//"))], sources
    for source in sources:
        if source.startswith("data:"):
            continue
        target = httpx.URL(url + "/docs/").join(source)
        assert httpx.get(target).status_code == 200, source
    assert httpx.get(url + "/docs", follow_redirects=False).headers["location"] == "docs/"


async def test_the_api_page_lists_both_documents_and_calls_the_host_with_the_key(
    served: tuple[str, str], tmp_path: Path
) -> None:
    url, key = served
    async with browser_page(tmp_path / "profile", "api-page") as page:
        await page.goto(url + "/docs/")
        operations = page.locator(".opblock")
        await expect(operations.first).to_be_visible()
        assert await page.locator(".opblock-summary-path", has_text="/v1/workflows").count() >= 1

        await page.get_by_role("button", name=re.compile("Authorize")).first.click()
        await page.locator(".auth-container input").first.fill(key)
        await page.locator(".auth-btn-wrapper button.authorize").click()
        await page.locator(".auth-btn-wrapper button", has_text="Close").click()

        listing = page.locator(
            ".opblock-get", has=page.locator(".opblock-summary-path", has_text=re.compile(r"^/v1/workflows$"))
        )
        await listing.first.locator(".opblock-summary").click()
        await listing.first.get_by_role("button", name="Try it out").click()
        await listing.first.get_by_role("button", name="Execute").click()
        status = listing.first.locator(".live-responses-table tbody .response-col_status").first
        await expect(status).to_contain_text("200")
        await expect(listing.first.locator(".live-responses-table")).to_contain_text("demo-expense-approval")

        # The v2 document is one choice away.
        await page.locator("select#select").select_option(label="OpenWOP v2")
        await expect(page.locator(".opblock-summary-path", has_text=re.compile(r"^/runs$")).first).to_be_visible()


@pytest.mark.parametrize(
    ("document", "path"),
    [("OpenWOP v1 (and AG-UI, LangGraph, MCP, A2A)", "/v1/openapi.json"), ("OpenWOP v2", "/openapi.json")],
)
async def test_the_api_page_opens_each_document_without_an_error_banner(
    served: tuple[str, str], tmp_path: Path, document: str, path: str
) -> None:
    """Swagger UI shows what it finds wrong with a document (a field it does not support, a broken
    reference) in its errors box above the operations: a first look at the API shows none."""
    url, _ = served
    async with browser_page(tmp_path / "profile", f"api-page-errors{path}") as page:
        await page.goto(url + "/docs/?" + str(httpx.QueryParams({"urls.primaryName": document})))
        await expect(page.locator(".info .url")).to_have_text(re.compile(rf"^\s*{re.escape(path)}\s*$"))
        await expect(page.locator(".opblock").first).to_be_visible()
        await page.wait_for_load_state("networkidle")
        errors = page.locator(".swagger-ui .errors-wrapper")
        assert await errors.count() == 0, f"{document}: " + " | ".join(await errors.all_inner_texts())
