"""Every example of the documentation runs as pasted, against a real ``serve``, and prints what its page shows.

The host is started as the Get-started page starts it (``openwop-bridge serve``
with its defaults: demo workflows, a dev key printed) on ``127.0.0.1:8000``, the
address every page uses; if that port is taken the test fails and says so. Each
page's blocks run in order in one ``bash -euo pipefail`` session (so a block may use
what an earlier one set), with ``BRIDGE_KEY`` exported and the project's
interpreter first on ``PATH``; Python blocks run as programs with that
interpreter, JavaScript blocks with Node and the packages of ``tests/node``.
The conventions are in ``tests/docs/snippets.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.snippets import ROOT, RUN, SHOWN, Block, blocks, matches, pages
from tests.server import ServerProcess

PORT = 8000
PAGE_TIMEOUT_S = 300
NODE_MODULES = ROOT / "tests" / "node" / "node_modules"


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.kind and not b.skip_reason]


PAGES = [p for p in pages() if _runnable(p)]


def test_every_block_is_known_and_every_skip_has_a_reason() -> None:
    problems = []
    for page in pages():
        for block in blocks(page):
            if block.lang not in RUN and block.lang not in SHOWN:
                problems.append(f"{block.where}: fence language {block.lang!r} is neither run nor shown")
            first = block.text.split("\n", 1)[0]
            if "not run" in first and block.kind and not block.skip_reason:
                problems.append(f"{block.where}: write the skip as '# not run: <reason>'")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``openwop-bridge serve`` on 127.0.0.1:8000 with its defaults; yields the dev key it printed, and its output."""
    with socket.socket() as probe:
        # As serve binds: connections of an earlier server left in TIME_WAIT do not hold the port.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", PORT))
        except OSError:
            pytest.fail(
                f"port {PORT} on 127.0.0.1 is in use: the documentation's examples address http://127.0.0.1:{PORT}, "
                "so the docs test serves there; stop whatever listens on it and run again"
            )
    folder = tmp_path_factory.mktemp("docs-host")
    server = ServerProcess(folder / "openwop-bridge.db", port=PORT)
    server.start()
    try:
        key = re.search(r"dev API key \(every scope, tenant 'default'\): (\S+)", server.output())
        assert key, server.output()
        yield key.group(1), server.output().replace(server.db, "./openwop-bridge.db")
    finally:
        server.stop()


def test_the_banner_is_the_one_get_started_shows(served: tuple[str, str]) -> None:
    page = ROOT / "docs" / "get-started" / "index.md"
    [shown] = [b for b in blocks(page) if b.lang == "text" and b.text.startswith("openwop-bridge ")]
    printed = [line for line in served[1].splitlines() if not re.match(r"\d{4}-\d\d-\d\d ", line)]  # log lines
    assert matches(shown.text, "\n".join(printed)), f"{shown.where} shows\n{shown.text}--- serve printed\n{served[1]}"


def _session(page: Path, runnable: list[Block], work: Path) -> str:
    """The bash script that runs ``runnable`` in order, each block's output into ``work/out.<n>``."""
    lines = ["set -euo pipefail", f"cd {shlex.quote(str(ROOT))}"]
    for n, block in enumerate(runnable):
        out = shlex.quote(str(work / f"out.{n}"))
        lines.append(f"echo {n} > {shlex.quote(str(work / 'current'))}")
        if block.kind == "sh":
            path = work / f"block.{n}.sh"
            path.write_text(block.text)
            lines.append(f"source {shlex.quote(str(path))} > {out} 2>&1 < /dev/null")
        elif block.kind == "python":
            path = work / f"block.{n}.py"
            path.write_text(block.text)
            lines.append(f"python {shlex.quote(str(path))} > {out} 2>&1 < /dev/null")
        else:
            path = work / f"block.{n}.mjs"
            path.write_text(block.text)
            lines.append(f"node {shlex.quote(str(path))} > {out} 2>&1 < /dev/null")
    lines.append(f"echo done > {shlex.quote(str(work / 'current'))}")
    return "\n".join(lines) + "\n"


def _run_page(page: Path, key: str, work: Path) -> list[str]:
    """Run ``page``'s examples in one session against the served host; what went wrong, naming block and output."""
    runnable = _runnable(page)
    if any(b.kind == "js" for b in runnable) and not NODE_MODULES.is_dir():
        return [f"{runnable[0].where}: the page has JavaScript examples: run `npm ci` in tests/node first"]
    (work / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    script = work / "session.sh"
    script.write_text(_session(page, runnable, work))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENWOP_BRIDGE_")}
    env |= {"BRIDGE_KEY": key, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    proc = subprocess.Popen(
        ["bash", str(script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    session_out, timed_out = "", False
    try:
        session_out, _ = proc.communicate(timeout=PAGE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Whatever a block left in the background (a second host) goes with the session.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)
    current = (work / "current").read_text().strip() if (work / "current").exists() else "0"
    if current != "done":
        block = runnable[int(current)]
        out = work / f"out.{current}"
        output = out.read_text() if out.exists() else ""
        why = f"timed out after {PAGE_TIMEOUT_S} s" if timed_out else f"exited with {proc.returncode}"
        said = f"{output}{session_out}\n--- the block:\n{block.text}"
        return [f"{block.where} ({block.lang} block) {why}; its output:\n{said}"]
    problems = []
    for n, block in enumerate(runnable):
        actual = (work / f"out.{n}").read_text()
        if block.expected is not None and not matches(block.expected, actual):
            problems.append(f"{block.where}: the page shows\n{block.expected}--- but the block printed\n{actual}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(page: Path, served: tuple[str, str], tmp_path: Path) -> None:
    problems = _run_page(page, served[0], tmp_path)
    assert not problems, "\n\n".join(problems)


def test_a_failing_request_fails_its_block_and_names_page_line_and_output(
    served: tuple[str, str], tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n```sh\nRUN=run_none\n```\n\n"
        '```sh\necho asking\ncurl -fsS -H "Authorization: Bearer $BRIDGE_KEY" http://127.0.0.1:8000/v1/runs/$RUN\n'
        "echo never\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    [problem] = _run_page(page, served[0], work)
    assert problem.startswith(f"{page}:7 (sh block) exited with 22; its output:\nasking\n")
    assert "404" in problem and "never" not in problem.split("--- the block:")[0]


def test_output_unlike_the_page_fails_and_a_skipped_block_does_not_run(served: tuple[str, str], tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\n# not run: it would fail\nexit 3\n```\n\n```python\nprint('run_01x', 'completed')\n```\n\n"
        "```text\nrun_… completed\n```\n\n```sh\necho hello\n```\n\n```text\ngoodbye\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    assert _run_page(page, served[0], work) == [
        f"{page}:14: the page shows\ngoodbye\n--- but the block printed\nhello\n"
    ]


def test_the_readmes_first_example_with_a_wrong_key_stops_with_an_error(
    served: tuple[str, str], tmp_path: Path
) -> None:
    """Pasted into a shell (no ``set -e``) with a wrong ``BRIDGE_KEY``, the first example ends with curl's
    401 instead of polling ``/v1/runs/`` with an empty id forever."""
    first = _runnable(ROOT / "README.md")[0]
    assert first.kind == "sh" and "/v1/runs" in first.text, first.text
    script = tmp_path / "first.sh"
    script.write_text(first.text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENWOP_BRIDGE_")}
    env["BRIDGE_KEY"] = "owb_dev_not-the-key-the-host-printed"
    try:
        done = subprocess.run(
            ["bash", str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"still polling after 30 s with a wrong key; it printed:\n{exc.stderr!r}")
    assert "401" in done.stderr, done.stderr
