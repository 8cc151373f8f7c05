"""The directions of import, read from the source (every import counts: module level,
inside functions and under ``TYPE_CHECKING``).

- ``bridge.core`` decides and does no I/O: it imports only itself and the vendored spec;
- ``bridge.store`` imports only the core and itself;
- ``bridge.notify`` (notifications: deciding, planning, delivering, retrying, digests, the undeliverable
  policy, channels' callbacks) imports only the core, the store and itself: never the runtime nor the host,
  which reach down to it; the store never imports it;
- the host reaches the notifications only through :data:`HOST_NOTIFY` (the notify file, joining it to an
  engine, the Slack route's clicks, the v2 webhook surface);
- ``bridge.runtime`` never imports the host;
- ``bridge`` never imports ``adapters``, and the bench only from the CLI's ``bench`` command;
- an adapter never imports another adapter, and reaches ``bridge`` only through its two public
  faces, ``openwop_bridge`` and ``openwop_bridge.host``;
- protocol SDKs and the bench's peers are imported only in ``adapters`` and ``bench``;
- no two modules of ``bridge`` import each other, directly or around a loop;
- the host and the adapters reach the store only through the engine (``engine.store.x`` nowhere
  but in the command line, which opens stores);
- everything imports the one installed name, ``openwop_bridge``, never a folder's name.

The checks speak of the repository's folders (see :mod:`tests.imports`): an import of
``openwop_bridge.x`` is of ``bridge.x``, ``openwop_bridge.agui.x`` of ``adapters.agui.x`` and
``openwop_bridge.bench.x`` of ``bench.x``.
"""

from __future__ import annotations

import ast

import pytest

from tests.imports import ADAPTERS, MODULES, ROOT
from tests.imports import cycles as _cycles
from tests.imports import graph as _graph
from tests.imports import imports as _imports
from tests.imports import raw_imports as _raw_imports
from tests.imports import within as _within

SDKS = frozenset(
    {"ag_ui", "ag_ui_langgraph", "langgraph", "langchain", "langchain_core", "fastapi", "openwop_client"}
    | {"langgraph_sdk", "a2a", "mcp"}
)


def _violations(source_package: str, allowed: tuple[str, ...] = (), denied: tuple[str, ...] = ()) -> list[str]:
    """Imports of ``source_package``'s modules that leave ``allowed`` (within bridge) or enter ``denied``."""
    out = []
    for name, path in MODULES.items():
        if not _within(name, source_package):
            continue
        for line, target in _imports(path):
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if any(_within(target, d) for d in denied):
                out.append(where)
            elif allowed and _within(target, "bridge") and not any(_within(target, a) for a in allowed):
                out.append(where)
    return out


def test_the_core_imports_only_itself_and_the_spec() -> None:
    assert _violations("bridge.core", allowed=("bridge.core", "bridge.spec")) == []


def test_the_store_imports_only_the_core() -> None:
    assert _violations("bridge.store", allowed=("bridge.core", "bridge.store")) == []


#: The modules of ``bridge.notify`` the host may import: the rest of the layer is reached through them.
HOST_NOTIFY = (
    "bridge.notify.config",
    "bridge.notify.install",
    "bridge.notify.slack",
    "bridge.notify.slack_clicks",
    "bridge.notify.webhook.channel",
    "bridge.notify.webhook.subscriptions",
)


def test_the_notifications_import_only_the_core_the_store_and_themselves() -> None:
    allowed = ("bridge.core", "bridge.store", "bridge.notify")
    assert _violations("bridge.notify", allowed=allowed, denied=("bridge.runtime", "bridge.host")) == []


def test_the_store_never_imports_the_notifications() -> None:
    assert _violations("bridge.store", denied=("bridge.notify",)) == []


def test_the_host_reaches_the_notifications_through_their_faces() -> None:
    found = [
        f
        for f in _violations("bridge.host", denied=("bridge.notify",))
        if not any(f.endswith(f" imports {face}") for face in HOST_NOTIFY)
    ]
    assert found == []


def test_the_runtime_never_imports_the_host() -> None:
    assert _violations("bridge.runtime", denied=("bridge.host",)) == []


def test_bridge_never_imports_adapters_and_the_bench_only_from_its_command() -> None:
    found = _violations("bridge", denied=("adapters", "bench"))
    assert [f for f in found if not f.startswith("bridge/host/cli.py") or "adapters" in f] == []


@pytest.mark.parametrize(
    "adapter", sorted(p.name for p in (ROOT / "adapters").iterdir() if (p / "__init__.py").exists())
)
def test_an_adapter_uses_only_the_public_faces_and_no_other_adapter(adapter: str) -> None:
    others = tuple(f"adapters.{other}" for other in ADAPTERS if other != adapter)
    found = []
    for name, path in MODULES.items():
        if not _within(name, f"adapters.{adapter}"):
            continue
        for line, target in _imports(path):
            private = _within(target, "bridge") and target not in ("bridge", "bridge.host")
            if private or any(_within(target, o) for o in others):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert found == []


def test_protocol_sdks_only_in_adapters_and_the_bench() -> None:
    found = []
    for name, path in MODULES.items():
        if not _within(name, "bridge"):
            continue
        for line, target in _imports(path):
            if target.split(".")[0] in SDKS:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert found == []


def test_everything_imports_the_installed_name_only() -> None:
    """The folders are not import names: ``bridge``, ``adapters`` or ``bench`` imported directly would
    load a second copy of a module beside the installed ``openwop_bridge`` one."""
    folders = ("bridge", "adapters", "bench")
    found = []
    for folder in (*folders, "tests", "examples", "docs", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            for line, written, _ in _raw_imports(path):
                if written.split(".")[0] in folders:
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {written}")
    assert found == []


def test_the_checks_see_a_violation() -> None:
    """The reader finds imports at every depth, so a check above cannot pass by reading nothing."""
    imports = {target for _, target in _imports(ROOT / "bridge" / "host" / "cli.py")}
    assert "bridge.runtime.engine" in imports  # module level
    assert any(_within(t, "bench") for t in imports)  # inside the bench command's function
    assert _violations("bridge.host", allowed=("bridge.core",)) != []


def test_bridge_has_no_import_cycles() -> None:
    assert _cycles(_graph("bridge")) == []


def test_the_cycle_check_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert len(_graph("bridge")) > 50


def test_surfaces_reach_the_store_only_through_the_engine() -> None:
    found = []
    for name, path in MODULES.items():
        if not (_within(name, "adapters") or _within(name, "bridge.host")) or name == "bridge.host.cli":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            chained = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
            if chained and node.value.attr == "store":  # type: ignore[union-attr]
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .store.{node.attr}")
            passed = isinstance(node, ast.Call) and any(
                isinstance(a, ast.Attribute) and a.attr == "store" for a in node.args
            )
            if passed:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} passes .store")
    assert found == []


def _imports_of(package: str) -> set[str]:
    return {t for name, path in MODULES.items() if _within(name, package) for _, t in _imports(path)}


def test_the_majors_and_the_shared_http_layer_stay_apart() -> None:
    """v1 and v2 each build on the shared HTTP layer and never on each other or on the app above them (its
    module and its one ASGI layer); the shared layer imports neither major nor the app."""
    app = ("bridge.host.app", "bridge.host.layer")
    assert _violations("bridge.host.v1", denied=("bridge.host.v2", *app)) == []
    assert _violations("bridge.host.v2", denied=("bridge.host.v1", *app)) == []
    assert _violations("bridge.host.http", denied=("bridge.host.v1", "bridge.host.v2", *app)) == []


def test_the_app_takes_each_major_through_its_route_table() -> None:
    majors = {
        t
        for package in ("bridge.host.app", "bridge.host.layer")
        for t in _imports_of(package)
        if _within(t, "bridge.host.v1") or _within(t, "bridge.host.v2")
    }
    assert majors == {"bridge.host.v1.api", "bridge.host.v2.api"}


def test_routes_and_idempotency_are_declared_only_in_the_route_tables() -> None:
    """A major's module declares an ``Operation``; only :mod:`openwop_bridge.host.http.routing` turns it into a
    Starlette ``Route`` and wraps it for ``Idempotency-Key`` and its scope."""
    found = []
    for name, path in MODULES.items():
        if not (_within(name, "bridge.host.v1") or _within(name, "bridge.host.v2")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id
            if called in ("Route", "idempotent", "scoped"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {called}")
    assert found == []


_ERROR_FIELDS = frozenset({"code", "status", "retryable"})


def _errors_declared_apart(source: str) -> list[str]:
    """Error classes that set their wire code, status or retryability in their body, not in their class line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [
            b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases
        ]
        if not any(b.endswith("Error") for b in bases):
            continue
        for stmt in node.body:
            targets = (
                stmt.targets
                if isinstance(stmt, ast.Assign)
                else [stmt.target]
                if isinstance(stmt, ast.AnnAssign)
                else []
            )
            if any(isinstance(t, ast.Name) and t.id in _ERROR_FIELDS for t in targets):
                found.append(f"{node.name} (line {stmt.lineno})")
    return found


def test_every_error_names_its_code_and_status_in_its_class_line() -> None:
    apart = [f"{module}: {cls}" for module, path in MODULES.items() for cls in _errors_declared_apart(path.read_text())]
    assert apart == [], "declare them as class X(BridgeError, code=..., status=...):"


def test_the_error_declaration_check_sees_a_body_declaration() -> None:
    source = (
        'class X(BridgeError):\n    """x"""\n\n    code = "x"\n    status = 400\n\n\n'
        'class Y(X, code="y"):\n    """y"""\n'
    )
    assert _errors_declared_apart(source) == ["X (line 4)", "X (line 5)"]


#: The most lines a module of bridge/, adapters/ or bench/ may have.
MAX_MODULE_LINES = 500


def test_no_module_is_over_500_lines() -> None:
    long = {
        module: n for module, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these modules by concern (at most {MAX_MODULE_LINES} lines each)"
