"""The code blocks of the documentation pages, and how the docs test runs them.

A page's runnable blocks are its ```sh, ```bash, ```console, ```python and ```js fences.
A block whose first line is ``# not run: <reason>`` (``// not run: <reason>`` in
JavaScript) is shown, not run. A ```text fence right after a runnable block (only
blank lines between) is that block's output: the test compares them line by line,
``…`` in the expected text standing for any run of characters on its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Languages run, and those shown only; any other fence language fails the test (so a typo cannot hide a block).
RUN = {"sh": "sh", "bash": "sh", "console": "sh", "python": "python", "js": "js"}
SHOWN = {"text", "json", "yaml", "toml", "html", "http", "mermaid", ""}
SKIP = re.compile(r"^(?:#|//) not run: (?P<reason>\S.*)$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)(?P<rest>.*)$")


@dataclass
class Block:
    """One fenced block of a page."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    expected: str | None = None  # the ```text block right after it, if any

    @property
    def where(self) -> str:
        """``page:line`` of the block's opening fence, the page relative to the repository."""
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    @property
    def kind(self) -> str | None:
        """``sh``, ``python`` or ``js`` for a block to run, else None."""
        return RUN.get(self.lang)

    @property
    def skip_reason(self) -> str | None:
        first = self.text.split("\n", 1)[0].strip()
        match = SKIP.match(first)
        return match["reason"] if match else None


def pages() -> list[Path]:
    """Every documentation page (``docs/**/*.md``) and the README."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)
    return [*docs, ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order, each runnable one with the output block that follows it."""
    lines = page.read_text("utf-8").splitlines()
    found: list[Block] = []
    ends: list[int] = []  # the line index after each block's closing fence
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = match["indent"], match["fence"], match["lang"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and lines[j].strip().strip(fence[0]) == ""):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        block = Block(page, i + 1, lang, "\n".join(body) + "\n")
        if j == len(lines):
            raise AssertionError(f"{block.where}: a code fence that is never closed")
        previous = found[-1] if found else None
        between = lines[ends[-1] : i] if ends else []
        if (
            lang == "text"
            and previous is not None
            and previous.kind
            and not previous.skip_reason
            and all(not line.strip() for line in between)
        ):
            previous.expected = block.text
        found.append(block)
        ends.append(j + 1)
        i = j + 1
    return found


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected`` line by line, ``…`` matching any run of characters on its line."""
    want = [line.rstrip() for line in expected.rstrip("\n").split("\n")]
    got = [line.rstrip() for line in actual.rstrip("\n").split("\n")]
    if len(want) != len(got):
        return False
    for w, g in zip(want, got, strict=True):
        pattern = ".*".join(re.escape(part) for part in w.split("…"))
        if not re.fullmatch(pattern, g):
            return False
    return True
