"""The documentation site builds strictly with ``scripts/docs build``, and its checks catch what they claim to.

``mkdocs build --strict`` fails on any warning: with the ``validation`` settings of
``mkdocs.yml`` that includes a relative link to a missing page or a missing anchor,
a page left out of the nav, and a generated part whose committed text is stale. No
request leaves the machine (the checks read the built pages only). The README is not
part of the site: its relative links are checked here against the files of the repository.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from openwop_bridge.host.cli import build_parser
from tests.docs.snippets import ROOT

MKDOCS = [sys.executable, "-m", "mkdocs"]
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MKDOCS, "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=ENV,
    )


def test_the_site_builds_strictly_with_the_docs_script(tmp_path: Path) -> None:
    """``scripts/docs build``, as the README says to build the site (it installs the docs extra when missing)."""
    result = subprocess.run(
        [str(ROOT / "scripts" / "docs"), "build", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=ENV,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    config = (tmp_path / "site" / "operate" / "configuration" / "index.html").read_text()
    assert "generated:" not in config, "the marker lines stay in the page sources"
    serve = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["serve"]
    flags = [f for a in serve._actions for f in a.option_strings if f.startswith("--") and a.dest != "help"]
    missing = [flag for flag in flags if f"<code>{flag}" not in config]
    assert not missing, f"flags missing from the configuration page: {missing}"
    for variable in ("OPENWOP_BRIDGE_PORT", "OPENWOP_BRIDGE_API_KEYS", "OPENWOP_BRIDGE_NO_UI"):
        assert variable in config
    api = (tmp_path / "site" / "reference" / "http-api" / "index.html").read_text()
    assert "/v1/runs/{runId}/interrupts/{nodeId}" in api and "/runs:bulk-cancel" in api
    assert "owb_dev_" not in (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    python_api = (tmp_path / "site" / "reference" / "python-api" / "index.html").read_text()
    assert "RunService.create_run" in python_api and "async def create_run(" in python_api
    assert ":::" not in python_api


def test_a_stale_generated_part_fails_the_build_naming_the_page_and_the_command(tmp_path: Path) -> None:
    """The hook builds each part again: committed text that differs from the code is a warning, so the strict
    build stops and says which page to refresh and how."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(
        "# Home\n\n<!-- generated: error-codes -->\n| an old table |\n<!-- end generated: error-codes -->\n"
    )
    config = {
        "site_name": "check",
        "docs_dir": str(docs),
        "hooks": [str(ROOT / "docs" / "_hooks" / "generate.py")],
        "markdown_extensions": ["tables"],
        "nav": ["index.md"],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    result = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    message = "docs/index.md: generated part stale (error-codes): run scripts/docs generate and commit the page"
    assert message in result.stderr


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """The same validation settings, on two pages: a link to a missing page and to a missing anchor."""
    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[gone](gone.md) and [there](other.md#nowhere)\n")
    (docs / "other.md").write_text("# Other\n\n## Somewhere\n")
    config = {
        "site_name": "check",
        "docs_dir": str(docs),
        "validation": settings["validation"],
        "markdown_extensions": ["toc"],
        "nav": ["index.md", "other.md"],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    result = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "gone.md" in result.stderr and "#nowhere" in result.stderr


def test_the_readme_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    problems = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path, _, anchor = target.partition("#")
        file = ROOT / path
        if not file.exists():
            problems.append(f"README.md links to {target}, which does not exist")
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+\s+(.*)$", file.read_text(), re.MULTILINE)
            slugs = {re.sub(r"[^\w\s-]", "", h).strip().lower().replace(" ", "-") for h in headings}
            if anchor not in slugs:
                problems.append(f"README.md links to {target}: no heading {anchor!r} there")
    assert not problems, "\n".join(problems)


def test_the_readme_is_read_in_minutes() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail to the site (docs/)"
    assert "docs/overview.svg" in "\n".join(lines)


def test_the_event_types_page_names_only_types_the_code_emits() -> None:
    page = (ROOT / "docs" / "reference" / "events.md").read_text()
    table = page[page.index("| type | when |") :]
    listed = set(
        re.findall(
            r"`([a-zA-Z]+(?:\.[a-zA-Z]+)+)`",
            "\n".join(line.split("|")[1] for line in table.splitlines()[2:] if line.startswith("|")),
        )
    )
    code = "\n".join(p.read_text() for folder in ("bridge", "adapters") for p in (ROOT / folder).rglob("*.py"))
    unknown = sorted(t for t in listed if f'"{t}"' not in code)
    assert listed and not unknown, f"event types on the page that no code emits: {unknown}"


def test_the_keys_page_lists_every_scope_the_host_checks() -> None:
    from openwop_bridge.core.auth import SCOPES

    text = (ROOT / "docs" / "operate" / "keys.md").read_text("utf-8")
    section = text.split("## Scopes", 1)[1].split("\n## ", 1)[0]
    listing = section.strip().split("`*`", 1)[0]  # the list ends with the wildcard; examples of other scopes follow
    listed = set(re.findall(r"`([a-z]+:[a-z-]+)`", listing))
    assert listed == set(SCOPES), f"missing {set(SCOPES) - listed}, not the host's {listed - set(SCOPES)}"


def test_every_tracked_file_at_the_root_is_named_somewhere() -> None:
    """A file at the repository's root that no other tracked text file names (git's own aside) is left over."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    texts = {}
    for name in tracked:
        try:
            texts[name] = (ROOT / name).read_text("utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
    top = [name for name in tracked if "/" not in name and name not in {".gitignore", ".gitattributes", "Makefile"}]
    unnamed = [name for name in top if not any(name in text for other, text in texts.items() if other != name)]
    assert not unnamed, f"tracked at the root and named nowhere: {unnamed}"
