"""Fixtures: a real engine per test (SQLite, or PostgreSQL with
``BRIDGE_TEST_STORE=postgres``), the official fixtures loaded."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from openwop_bridge import Engine, SqliteStore
from openwop_bridge.core.auth import KeyRing, make_key
from openwop_bridge.core.workflow import load_workflow
from openwop_bridge.host.app import create_app
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.spec import iter_fixtures
from openwop_bridge.store.base import Store
from tests import pg

KEYS = {
    "admin": make_key("key-admin-0001", principal="alice", roles=["admin"]),
    "bob": make_key(
        "key-bob-000001", principal="bob", scopes=["runs:read", "runs:create", "approvals:respond", "interrupts:read"]
    ),
    "reader": make_key("key-reader-001", principal="rita", scopes=["runs:read"]),
    "other": make_key("key-other-0001", principal="olga", tenant="other"),
    "operator": make_key("key-operator-1", principal="opal", roles=["operator"]),
}
TOKENS = {
    "admin": "key-admin-0001",
    "bob": "key-bob-000001",
    "reader": "key-reader-001",
    "other": "key-other-0001",
    "operator": "key-operator-1",
}


def auth(who: str) -> dict[str, str]:
    """Authorization header for a configured test key."""
    return {"Authorization": f"Bearer {TOKENS[who]}"}


def fixture_workflows() -> list:
    """The official conformance fixtures, loaded unmodified."""
    return [load_workflow(doc) for doc in iter_fixtures()]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "bridge.db"


STORE = os.environ.get("BRIDGE_TEST_STORE", "sqlite")
# Tests about SQLite itself (its query plans, its group commit): they keep their SQLite engine under
# BRIDGE_TEST_STORE=postgres; tests/store/test_store_contract.py covers PostgreSQL's plans.
SQLITE_ONLY = {"test_inbox_queries_use_their_index", "test_an_agui_cycle_makes_two_durable_commits"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "engine_store: runs on the store BRIDGE_TEST_STORE selects")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # scripts/test runs these a second time on PostgreSQL (``-m engine_store``).
    for item in items:
        if {"engine", "make_engine"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.engine_store)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test (fails without BRIDGE_TEST_PG_URL)."""
    with pg.fresh_database() as url:
        yield url


def _store(request: pytest.FixtureRequest, sqlite_path: Path) -> Store:
    if STORE == "sqlite" or request.node.originalname in SQLITE_ONLY:
        return SqliteStore(sqlite_path)
    if STORE != "postgres":
        pytest.fail(f"BRIDGE_TEST_STORE must be sqlite or postgres, not {STORE!r}", pytrace=False)
    from openwop_bridge.store.postgres import PostgresStore

    name, url = pg.create_database()
    request.addfinalizer(lambda: pg.drop_database(name))
    return PostgresStore(url)


@pytest.fixture
async def engine(request: pytest.FixtureRequest, db_path: Path) -> AsyncIterator[Engine]:
    eng = Engine(_store(request, db_path), workflows=fixture_workflows())
    await eng.start()
    try:
        yield eng
    finally:
        await eng.stop()


@pytest.fixture
def make_engine(request: pytest.FixtureRequest, tmp_path: Path):
    """Build (not start) further engines, e.g. with the conversation primitive off."""

    def build(config: EngineConfig | None = None, name: str = "other.db") -> Engine:
        return Engine(_store(request, tmp_path / name), workflows=fixture_workflows(), config=config)

    return build


@pytest.fixture
async def client(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process HTTP client for the host (the engine is started by the fixture)."""
    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=0.2)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bridge.test") as c:
        yield c


@pytest.fixture
async def live(engine: Engine) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """The host on real uvicorn over loopback, and a client for it."""
    from tests.server import uvicorn_server

    app = create_app(engine, KeyRing(KEYS.values()), manage_engine=False, keepalive_s=0.2)
    async with uvicorn_server(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
        yield url, c
