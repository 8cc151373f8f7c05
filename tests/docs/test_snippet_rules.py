"""How the docs test reads a page: which blocks run, which is whose output, and what matches."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.snippets import blocks, matches


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
