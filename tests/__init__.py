"""The test suite. Importing it first checks that the editable install links every module.

``pip install -e . --config-settings editable_mode=strict`` (what ``./scripts/test`` runs) lays a
tree of links under ``build/`` that maps the folders to ``openwop_bridge``; a module added since is
not in it until the next install. Say so in one line instead of failing on an import later.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
_FOLDERS = {"bridge": "", "adapters": None, "bench": "bench"}


def _unlinked() -> list[str]:
    """Source modules the installed ``openwop_bridge`` does not see (empty when it is not a link tree)."""
    spec = importlib.util.find_spec("openwop_bridge")
    if spec is None or spec.origin is None:
        return ["openwop_bridge (not installed)"]
    installed = Path(spec.origin).parent
    if not installed.is_relative_to(_ROOT / "build"):
        return []  # a wheel, or an install that maps the folders themselves
    missing = []
    for folder, prefix in _FOLDERS.items():
        for source in sorted((_ROOT / folder).rglob("*.py")):
            relative = source.relative_to(_ROOT / folder)
            target = installed / relative if prefix is None else installed / prefix / relative
            if not target.exists():
                missing.append(str(source.relative_to(_ROOT)))
    return missing


if _missing := _unlinked():
    raise ImportError(
        f"the installed openwop_bridge does not have {', '.join(_missing[:3])}"
        f"{' …' if len(_missing) > 3 else ''}: run ./scripts/test (it reinstalls), or "
        "python -m pip install --no-deps -e . --config-settings editable_mode=strict"
    )
