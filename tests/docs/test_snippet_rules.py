"""How the docs test reads a page: which blocks run, which is whose output, and what matches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.snippets import ROOT, Block, blocks, matches, pages


def test_blocks_in_list_items_run_and_a_text_block_after_a_block_is_its_output(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "- a step:\n\n  ```sh\n  echo one\n  ```\n\n  ```text\n  one\n  ```\n\n"
        "```python\nprint(2)\n```\n\nsome words\n\n```text\n2\n```\n"
    )
    sh, shown, py, loose = blocks(page)
    assert (sh.kind, sh.text, sh.line, sh.expected) == ("sh", "echo one\n", 3, "one\n")
    assert shown.kind is None
    assert py.kind == "python" and py.expected is None, "prose between: the text block is not its output"
    assert loose.lang == "text"


def test_a_skipped_block_has_no_output_to_compare_and_keeps_its_reason(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("```sh\n# not run: needs a PostgreSQL server\npsql\n```\n\n```text\nok\n```\n")
    block = blocks(page)[0]
    assert block.skip_reason == "needs a PostgreSQL server" and block.expected is None


def test_an_unclosed_fence_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("```sh\necho open\n")
    with pytest.raises(AssertionError, match="never closed"):
        blocks(page)


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        ("run_…\ncompleted\n", "run_01abc\ncompleted\n", True),
        ("run_…\ncompleted\n", "run_01abc\ncompleted", True),
        ("run_…\n", "run_01abc\ncompleted\n", False),
        ("status: completed\n", "status: failed\n", False),
        ("a … b\n", "a x\nb\n", False),
        ("[1, 2]\n", "[1, 2]   \n", True),
        ("a.b\n", "axb\n", False),
    ],
)
def test_an_ellipsis_stands_for_anything_on_its_line_and_nothing_else_varies(
    expected: str, actual: str, same: bool
) -> None:
    assert matches(expected, actual) is same


# What a reader pastes into an interactive shell must not close it, collide with another page's
# example, install outside .venv or call a command that is not on PATH.

SHELL = {"sh", "bash", "console"}
PORT = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\])[:\"', ]+(\d{2,5})\b|--port[ =](\d+)|_PORT=(\d+)")
EXIT = re.compile(r"(?:^|[;&|{(]|\bthen|\bdo|\belse)\s*exit\b", re.MULTILINE)
BARE_PIP = re.compile(r"(?<![\w./-])(?<!-m )pip3? install\b")
BARE_CLI = re.compile(r"(?<![\w./-])openwop-bridge (?:serve|keys|bench|--)")
IGNORED_POLL = re.compile(r"\b(?:until|while)\s+\[+\s*\"?\$\(")


def _shell_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page) if b.lang in SHELL]


def _commands(block: Block) -> str:
    """The block without its comments (a ``#`` after a blank or at a line's start)."""
    return "\n".join(re.sub(r"(?:^|\s)#.*$", "", line) for line in block.text.splitlines())


def test_no_shell_block_exits_the_readers_shell() -> None:
    found = [b.where for b in _shell_blocks() if EXIT.search(_commands(b))]
    assert not found, f"`exit` closes the terminal the block is pasted into: {found}"


def test_a_polling_loop_stops_when_its_request_fails() -> None:
    """``until [ "$(curl …)" = done ]`` ignores a failing curl and polls forever (a wrong key, an empty id)."""
    found = [b.where for b in _shell_blocks() if IGNORED_POLL.search(_commands(b))]
    assert not found, f"a loop tests a command's output inside [ ], so its failure never stops it: {found}"


def test_every_port_but_8000_belongs_to_one_page() -> None:
    """Pages' second hosts and receivers each have a port of their own; 8001 is the docs preview's."""
    owners: dict[str, set[str]] = {}
    for page in pages():
        for block in blocks(page):
            for line in block.text.splitlines():
                for match in PORT.finditer(line):
                    port = next(g for g in match.groups() if g)
                    owner = "mkdocs serve" if "mkdocs serve" in line else str(page.relative_to(ROOT))
                    owners.setdefault(port, set()).add(owner)
    shared = {port: sorted(who) for port, who in owners.items() if port != "8000" and len(who) > 1}
    assert not shared, f"ports used by more than one page (or by the docs preview and a page): {shared}"
    assert owners.get("8001") == {"mkdocs serve"}, owners.get("8001")


def test_no_bare_pip_and_no_bare_openwop_bridge() -> None:
    problems = []
    for page in pages():
        text = page.read_text("utf-8")
        for n, line in enumerate(text.splitlines(), 1):
            if BARE_PIP.search(line):
                problems.append(f"{page.relative_to(ROOT)}:{n}: pip outside .venv: {line.strip()}")
    for block in _shell_blocks():
        if BARE_CLI.search(_commands(block)):
            problems.append(f"{block.where}: openwop-bridge is not on PATH: write .venv/bin/openwop-bridge")
    assert not problems, "\n".join(problems)
