"""The code blocks of the documentation pages, and how the docs test runs them.

A page's runnable blocks are its ```sh, ```bash, ```console, ```python and ```js fences.
A block whose first line is ``# not run: <reason>`` (``// not run: <reason>`` in
JavaScript) is shown, not run. A ```text fence right after a runnable block (only
blank lines between) is that block's output: the test compares them line by line,
``…`` in the expected text standing for any run of characters on its line.

A page's examples run in order in one ``bash -euo pipefail`` session (:func:`run_page`), against
the suite's host on 127.0.0.1:8000, unless the page carries :data:`OWN_HOST`: then it starts a
host of its own there (with an identity file, say), and runs while the suite's host is stopped.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The address every page's examples use.
PORT = 8000
PAGE_TIMEOUT_S = 300
NODE_MODULES = ROOT / "tests" / "node" / "node_modules"
#: The line by which a page says it starts its own host on 127.0.0.1:8000 (so the suite's must not be there).
OWN_HOST = "<!-- docs-test: this page starts its own host on 127.0.0.1:8000 -->"

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


def runnable(page: Path) -> list[Block]:
    """The page's blocks that run."""
    return [b for b in blocks(page) if b.kind and not b.skip_reason]


def serves_its_own_host(page: Path) -> bool:
    """Whether the page carries :data:`OWN_HOST`."""
    return OWN_HOST in page.read_text("utf-8").splitlines()


def require_free_port() -> None:
    """Fail the test, saying why, unless 127.0.0.1:8000 can be bound."""
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


def run_page(page: Path, key: str, work: Path) -> list[str]:
    """Run ``page``'s examples in one session against the served host; what went wrong, naming block and output."""
    to_run = runnable(page)
    if any(b.kind == "js" for b in to_run) and not NODE_MODULES.is_dir():
        return [f"{to_run[0].where}: the page has JavaScript examples: run `npm ci` in tests/node first"]
    (work / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    script = work / "session.sh"
    script.write_text(_session(page, to_run, work))
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
        block = to_run[int(current)]
        out = work / f"out.{current}"
        output = out.read_text() if out.exists() else ""
        why = f"timed out after {PAGE_TIMEOUT_S} s" if timed_out else f"exited with {proc.returncode}"
        said = f"{output}{session_out}\n--- the block:\n{block.text}"
        return [f"{block.where} ({block.lang} block) {why}; its output:\n{said}"]
    problems = []
    for n, block in enumerate(to_run):
        actual = (work / f"out.{n}").read_text()
        if block.expected is not None and not matches(block.expected, actual):
            problems.append(f"{block.where}: the page shows\n{block.expected}--- but the block printed\n{actual}")
    return problems
