"""The shell scripts a newcomer runs first: what they print, and what they say is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bin_with(tmp_path: Path, *tools: str) -> Path:
    """A directory for PATH holding only the named tools (links to the real ones)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in tools:
        real = shutil.which(tool)
        assert real, f"{tool} is needed to run this test"
        (folder / tool).symlink_to(real)
    return folder


def _fake(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_scripts_test_names_each_missing_tool_before_anything_runs(tmp_path: Path) -> None:
    path = _bin_with(tmp_path, "bash", "dirname")
    env = {k: v for k, v in os.environ.items() if k != "BRIDGE_TEST_PG_URL"}
    env |= {"PATH": str(path), "BRIDGE_TEST_CHROMIUM": str(tmp_path / "no-chromium"), "PG_BINDIR": str(tmp_path)}
    result = subprocess.run(
        [str(ROOT / "scripts" / "test")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 4, result.stderr
    node, postgres, docs_tools, chromium = lines
    assert node.startswith("scripts/test: Node.js and npm are missing") and "apt-get install nodejs npm" in node
    assert postgres.startswith("scripts/test: PostgreSQL server binaries are missing")
    assert "apt-get install postgresql" in postgres and "BRIDGE_TEST_PG_URL" in postgres
    assert docs_tools.startswith("scripts/test: curl or jq is missing") and "apt-get install curl jq" in docs_tools
    assert chromium.startswith(f"scripts/test: Chromium is missing at {tmp_path / 'no-chromium'}")
    assert "apt-get install chromium" in chromium and "BRIDGE_TEST_CHROMIUM" in chromium


def test_scripts_test_asks_for_no_postgres_binaries_when_a_server_is_named(tmp_path: Path) -> None:
    path = _bin_with(tmp_path, "bash", "dirname")
    env = {
        **os.environ,
        "PATH": str(path),
        "BRIDGE_TEST_CHROMIUM": str(tmp_path / "no-chromium"),
        "PG_BINDIR": str(tmp_path),
        "BRIDGE_TEST_PG_URL": "postgresql://bridge@127.0.0.1:1/postgres",
    }
    result = subprocess.run(
        [str(ROOT / "scripts" / "test")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "PostgreSQL" not in result.stderr and len(result.stderr.splitlines()) == 3, result.stderr


def _serve_copy(tmp_path: Path, pip_status: int) -> Path:
    """scripts/serve in a checkout whose .venv has a noisy pip and a stand-in server."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "serve", tmp_path / "scripts" / "serve")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    _fake(
        tmp_path / ".venv" / "bin" / "python",
        f'echo "$*" >>"$(dirname "$0")/../pip-calls"\n'
        f'echo "Collecting starlette"; echo "WARNING: pip is noisy" >&2; exit {pip_status}\n',
    )
    _fake(tmp_path / ".venv" / "bin" / "openwop-bridge", 'echo "server: $*"\n')
    return tmp_path / "scripts" / "serve"


SERVE_INSTALLING = (
    "scripts/serve: installing the dependencies into .venv (about two minutes the first time; "
    "pip's output goes to .venv/serve-install.log)\n"
)


def test_scripts_serve_keeps_pip_output_out_of_the_terminal_and_says_it_installs(tmp_path: Path) -> None:
    serve = _serve_copy(tmp_path, pip_status=0)
    result = subprocess.run([str(serve), "--port", "8001"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("server: serve --port 8001\n", SERVE_INSTALLING)
    again = subprocess.run([str(serve)], capture_output=True, text=True, timeout=60)
    assert (again.stdout, again.stderr) == ("server: serve\n", ""), "a start that installs nothing says nothing"


def test_scripts_serve_shows_the_install_log_when_it_fails(tmp_path: Path) -> None:
    serve = _serve_copy(tmp_path, pip_status=1)
    result = subprocess.run([str(serve)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "Collecting starlette" in result.stdout and "WARNING: pip is noisy" in result.stdout
    assert result.stdout.rstrip().endswith("scripts/serve: installing the dependencies failed (log above)")
    assert "server:" not in result.stdout


def test_scripts_serve_installs_only_when_the_dependencies_changed(tmp_path: Path) -> None:
    serve = _serve_copy(tmp_path, pip_status=0)
    calls = tmp_path / ".venv" / "pip-calls"

    def start() -> int:
        result = subprocess.run([str(serve)], capture_output=True, text=True, timeout=60)
        assert result.stdout == "server: serve\n", result.stdout + result.stderr
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    assert start() == 1, "a first start installs"
    assert start() == 1, "a restart with nothing changed runs no pip"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["httpx"]\n')
    assert start() == 2, "a changed pyproject.toml installs again"
    assert start() == 2
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "y"\n')
    stamp = subprocess.run(["sha256sum", "pyproject.toml"], cwd=tmp_path, capture_output=True, text=True, check=True)
    (tmp_path / ".venv" / "test.installed").write_text(stamp.stdout.split()[0] + "\n")
    assert start() == 2, "what scripts/test installed for this pyproject.toml covers serve"


def test_a_failed_install_is_tried_again_at_the_next_start(tmp_path: Path) -> None:
    serve = _serve_copy(tmp_path, pip_status=1)
    for _ in range(2):
        assert subprocess.run([str(serve)], capture_output=True, text=True, timeout=60).returncode == 1
    assert len((tmp_path / ".venv" / "pip-calls").read_text().splitlines()) == 2


def test_scripts_test_says_what_it_installs_and_builds_before_each_long_step(tmp_path: Path) -> None:
    """In a checkout whose tools all stand in, each long step is announced on stderr, and nothing else is said."""
    (tmp_path / "scripts").mkdir()
    for name in ("test", "pg-test-cluster"):
        shutil.copy2(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    for folder in ("tests/node", "examples/chat", "tests/browser/agent-chat-ui"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "package.json").write_text("{}")
    tools = tmp_path / "tools"
    for tool in ("node", "npm", "curl", "jq", "chromium"):
        _fake(tools / tool, "exit 0\n")
    for tool in ("python", "ruff", "mypy", "pytest"):
        _fake(tmp_path / ".venv" / "bin" / tool, "exit 0\n")
    path = _bin_with(tmp_path, "bash", "dirname", "sha256sum", "cut", "cat")
    env = {
        **os.environ,
        "PATH": f"{tools}{os.pathsep}{path}",
        "BRIDGE_TEST_CHROMIUM": str(tools / "chromium"),
        "BRIDGE_TEST_PG_URL": "postgresql://bridge@127.0.0.1:1/postgres",
    }
    result = subprocess.run(
        [str(tmp_path / "scripts" / "test")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    said = result.stderr.splitlines()
    assert said == [
        "scripts/test: installing the Python dependencies into .venv (the first time, this and the Node steps "
        "after it take about five minutes)",
        "scripts/test: installing the Node packages of tests/node",
        "scripts/test: building the chat example",
        "scripts/test: building agent-chat-ui",
    ], result.stderr
    assert result.stdout.splitlines()[:3] == ["== ruff", "== mypy", "== pytest"], result.stdout


def test_scripts_structure_draws_the_layers_with_no_arrow_up_and_no_cycle() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "structure")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "layers, bottom up: spec < core < store < identity < notify < runtime < host" in result.stdout
    assert "     host -> runtime" in result.stdout  # an arrow down is drawn
    assert "arrows up a layer: 0" in result.stdout
    assert "import cycles among the modules of bridge/: 0" in result.stdout
