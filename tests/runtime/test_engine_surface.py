"""One way to reach each engine operation: the engine's methods; its services are private."""

from __future__ import annotations

from openwop_bridge import Engine
from openwop_bridge.runtime.answers import AnswerService
from openwop_bridge.runtime.batch import BatchAnswers
from openwop_bridge.runtime.decision_records import DecisionRecords
from openwop_bridge.runtime.delegations import DelegationService
from openwop_bridge.runtime.executors import Executors
from openwop_bridge.runtime.kernel import Delegate
from openwop_bridge.runtime.links import LinkService
from openwop_bridge.runtime.run_views import RunViews
from openwop_bridge.runtime.runs import RunService
from openwop_bridge.store import SqliteStore

SERVICES = (
    AnswerService,
    BatchAnswers,
    DecisionRecords,
    DelegationService,
    Executors,
    LinkService,
    RunViews,
    RunService,
)


def test_no_service_is_a_public_attribute_of_the_engine() -> None:
    engine = Engine(SqliteStore(":memory:"))
    public = {name: value for name, value in vars(engine).items() if not name.startswith("_")}
    assert [name for name, value in public.items() if isinstance(value, SERVICES)] == []
    for gone in ("runs", "views", "links", "answers", "batch", "executors"):
        assert not hasattr(engine, gone), gone


def test_every_delegated_method_reaches_its_service() -> None:
    engine = Engine(SqliteStore(":memory:"))
    delegates = {name: d for name, d in vars(Engine).items() if isinstance(d, Delegate)}
    assert {"create_run", "resolve", "snapshot", "cancel_run", "inbox", "mint_token"} <= set(delegates)
    for name, delegate in delegates.items():
        bound = getattr(engine, name)
        assert isinstance(bound.__self__, SERVICES), name
        assert bound.__func__ is delegate.method, name
