"""The distribution claims one import name, ``openwop_bridge``, and nothing generic.

The wheel is built from the repository, installed (not editable) into an environment of its own
beside AdapterHub's ``adapters`` package, and run from a folder that holds a user's own
``adapters/`` package: both stay theirs, and ours imports and serves. The dependencies come from
``.venv/wheelhouse`` (``./scripts/test`` fills it), so nothing here reaches past this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from tests.server import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = Path(os.environ.get("BRIDGE_TEST_WHEELHOUSE", ROOT / ".venv" / "wheelhouse"))
PUBLIC = """
import importlib.metadata as metadata, importlib.util, json, sys
import adapters
from openwop_bridge import Engine, SqliteStore, approval, clarification
import openwop_bridge.agui, openwop_bridge.a2a, openwop_bridge.langgraph
import openwop_bridge.langgraph_api, openwop_bridge.mcp
from openwop_bridge.bench.options import add_arguments
tops = sorted({str(f).split("/")[0] for f in metadata.files("openwop-bridge") if not str(f).startswith("..")})
print(json.dumps({
    "mine": getattr(adapters, "MARKER", None),
    "engine": Engine.__module__,
    "agui": openwop_bridge.agui.__file__,
    "tops": tops,
    "adapterhub": [str(f) for f in metadata.files("adapters") if str(f) == "adapters/__init__.py"],
}))
"""


def _folders_of_packages() -> dict[str, str]:
    """Every package folder in the repository, by the name pyproject.toml must install it as."""
    found = {}
    for folder, name in (("bridge", "openwop_bridge"), ("bench", "openwop_bridge.bench")):
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(ROOT / folder).parts
            found[".".join((name, *parts))] = str(init.parent.relative_to(ROOT))
    for init in sorted((ROOT / "adapters").glob("*/**/__init__.py")):
        found[".".join(("openwop_bridge", *init.parent.relative_to(ROOT / "adapters").parts))] = str(
            init.parent.relative_to(ROOT)
        )
    return found


def test_pyproject_lists_every_package_folder_under_the_one_name() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert sorted(config["packages"]) == sorted(_folders_of_packages())
    assert {name.split(".")[0] for name in config["packages"]} == {"openwop_bridge"}


def _run(*args: str | Path, cwd: Path | None = None, timeout: float = 300) -> str:
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_the_wheel_installs_one_name_beside_adapterhub_and_a_users_adapters_folder(tmp_path: Path) -> None:
    adapterhub = sorted(WHEELHOUSE.glob("adapters-*.whl"))
    if not adapterhub:
        pytest.fail(f"no AdapterHub wheel in {WHEELHOUSE}: ./scripts/test fills it (or set BRIDGE_TEST_WHEELHOUSE)")
    dist = tmp_path / "dist"
    offline = ("--no-index", "--find-links", WHEELHOUSE)
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *offline, "-w", dist, ROOT)
    (wheel,) = dist.glob("openwop_bridge-*.whl")
    env = tmp_path / "env"
    _run(sys.executable, "-m", "venv", "--without-pip", env)
    python = env / "bin" / "python"
    pip = (sys.executable, "-m", "pip", "--python", python, "install", "-q", *offline)
    _run(*pip, wheel)
    _run(*pip, "--no-deps", adapterhub[-1])

    user = tmp_path / "app"
    (user / "adapters").mkdir(parents=True)
    (user / "adapters" / "__init__.py").write_text('MARKER = "mine"\n')
    seen = json.loads(_run(python, "-c", PUBLIC, cwd=user))
    assert seen["mine"] == "mine"  # the user's own adapters/ package is still theirs
    assert seen["engine"].startswith("openwop_bridge.")
    assert Path(seen["agui"]).is_relative_to(env)  # the installed copy, not the repository's folders
    assert seen["tops"] == ["openwop_bridge", "openwop_bridge-0.1.0.dist-info"]
    assert seen["adapterhub"] == ["adapters/__init__.py"]  # AdapterHub's file, not overwritten by ours

    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [env / "bin" / "openwop-bridge", "serve", "--port", str(port), "--db", tmp_path / "b.db"],
        cwd=user,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/.well-known/openwop", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                time.sleep(0.2)
        assert answer.status_code == 200
        assert answer.json()["protocolVersion"]
    finally:
        serve.terminate()
        serve.wait(20)
