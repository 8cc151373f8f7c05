"""Every example of the documentation runs as pasted, against a real ``serve``, and prints what its page shows.

The host is started as the Get-started page starts it (``openwop-bridge serve``
with its defaults: demo workflows, a dev key printed) on ``127.0.0.1:8000``, the
address every page uses; if that port is taken the test fails and says so. Each
page's blocks run in order in one ``bash -euo pipefail`` session (so a block may use
what an earlier one set), with ``BRIDGE_KEY`` exported and the project's
interpreter first on ``PATH``; Python blocks run as programs with that
interpreter, JavaScript blocks with Node and the packages of ``tests/node``.
The conventions are in ``tests/docs/snippets.py``. A page that starts a host of its own on that
address (with an identity file, say) runs without the suite's host, in ``test_own_host_pages.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.snippets import (
    PORT,
    ROOT,
    RUN,
    SHOWN,
    blocks,
    matches,
    pages,
    require_free_port,
    run_page,
    runnable,
    serves_its_own_host,
)
from tests.server import ServerProcess

#: The pages run against the suite's host (a page serving its own runs in test_own_host_pages.py).
PAGES = [p for p in pages() if runnable(p) and not serves_its_own_host(p)]


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
    require_free_port()
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


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(page: Path, served: tuple[str, str], tmp_path: Path) -> None:
    problems = run_page(page, served[0], tmp_path)
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
    [problem] = run_page(page, served[0], work)
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
    assert run_page(page, served[0], work) == [
        f"{page}:14: the page shows\ngoodbye\n--- but the block printed\nhello\n"
    ]


def test_the_readmes_first_example_with_a_wrong_key_stops_with_an_error(
    served: tuple[str, str], tmp_path: Path
) -> None:
    """Pasted into a shell (no ``set -e``) with a wrong ``BRIDGE_KEY``, the first example ends with curl's
    401 instead of polling ``/v1/runs/`` with an empty id forever."""
    first = runnable(ROOT / "README.md")[0]
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
