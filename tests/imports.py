"""The imports of the repository's modules, read from the source and named by folder (``bridge.x``,
``adapters.agui.x``, ``bench.x``): what ``tests/process/test_architecture.py`` checks and
``scripts/structure`` prints.

Every import counts: module level, inside functions and under ``TYPE_CHECKING``. An import of the
installed name is of its folder: ``openwop_bridge.x`` is ``bridge.x``, ``openwop_bridge.agui.x`` is
``adapters.agui.x`` and ``openwop_bridge.bench.x`` is ``bench.x``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    """A source file's module, by folder name."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(*packages: str) -> dict[str, Path]:
    """Every module under the given folders, by name."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


#: Every module of bridge/, adapters/ and bench/, by folder name.
MODULES = modules("bridge", "adapters", "bench")
#: The adapters' folder names.
ADAPTERS = sorted(p.name for p in (ROOT / "adapters").iterdir() if (p / "__init__.py").exists())


def folder_name(module: str) -> str:
    """The repository's name of an imported module: ``openwop_bridge.agui.x`` is ``adapters.agui.x``."""
    head, _, rest = module.partition(".")
    if head != "openwop_bridge":
        return module
    first = rest.split(".")[0]
    if first in ADAPTERS:
        return f"adapters.{rest}"
    if first == "bench":
        return rest
    return f"bridge.{rest}" if rest else "bridge"


def raw_imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, module, names)`` for every absolute import in a file, as written."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [a.name for a in node.names]


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every import in a file, by folder name; ``from a import b`` is ``a.b``
    when that is a module."""
    for line, written, names in raw_imports(path):
        module = folder_name(written)
        submodules = [f"{module}.{name}" for name in names if f"{module}.{name}" in MODULES]
        if not names or len(submodules) < len(names):
            yield line, module  # some name is defined by the module itself
        for candidate in submodules:
            yield line, candidate


def within(module: str, package: str) -> bool:
    """Whether ``module`` is ``package`` or inside it."""
    return module == package or module.startswith(package + ".")


def graph(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports."""
    return {
        name: {t for _, t in imports(path) if t in MODULES and within(t, package) and t != name}
        for name, path in MODULES.items()
        if within(name, package)
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The loops of an import graph (strongly connected components of two or more modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is a few hundred modules
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found
