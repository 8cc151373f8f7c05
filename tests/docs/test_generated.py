"""The reference parts generated from the code are committed in the pages, current, and complete.

The pages hold each part between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``
(so they read the same on GitHub as on the site); ``scripts/docs generate`` rewrites them. Here
every part is built again in memory and compared with the committed text.
"""

from __future__ import annotations

import re

import pytest

import openwop_bridge
from docs._hooks import generate
from docs._hooks.python_api import markdown, render
from tests.docs.snippets import ROOT


def test_every_committed_generated_part_matches_the_code() -> None:
    stale = generate.stale_pages()
    assert not stale, "\n".join(
        [f"{page.relative_to(ROOT)}: generated part stale ({', '.join(names)})" for page, names in stale.items()]
        + [f"run {generate.COMMAND} and commit the pages"]
    )


def test_the_reference_pages_hold_their_parts_in_the_repository() -> None:
    for page, name in [
        ("operate/configuration.md", "serve-options"),
        ("reference/cli.md", "cli-help"),
        ("reference/http-api.md", "openapi-v1"),
        ("reference/http-api.md", "openapi-v2"),
        ("reference/errors.md", "error-codes"),
        ("reference/python-api.md", "python-api"),
    ]:
        text = (ROOT / "docs" / page).read_text("utf-8")
        bodies = [m["body"] for m in generate.BLOCK.finditer(text) if m["name"] == name]
        assert bodies and all(body.strip() for body in bodies), f"docs/{page}: no committed text for {name}"
    assert "--port" in (ROOT / "docs" / "operate" / "configuration.md").read_text("utf-8")
    assert "::: " not in (ROOT / "docs" / "reference" / "python-api.md").read_text("utf-8")


def test_a_stale_part_is_found_and_rewritten_and_the_site_text_has_no_markers() -> None:
    fresh = generate.error_codes()
    page = "# Errors\n\n<!-- generated: error-codes -->\n| old |\n<!-- end generated: error-codes -->\n\nAfter.\n"
    rewritten, stale = generate.refresh(page, "errors.md")
    assert stale == ["error-codes"]
    assert rewritten == page.replace("| old |\n", fresh + "\n")
    assert generate.refresh(rewritten, "errors.md") == (rewritten, []), "a fresh part is not stale"
    assert generate.without_markers(rewritten) == f"# Errors\n\n{fresh}\n\nAfter.\n"


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("<!-- generated: no-such-part -->\n<!-- end generated: no-such-part -->\n", "no generated part named"),
        ("<!-- generated: error-codes -->\ntext\n", "without its"),
        ("<!-- generated: error-codes -->\n<!-- end generated: cli-help -->\n", "without its"),
    ],
)
def test_an_unknown_part_or_a_part_without_its_end_is_refused(page: str, message: str) -> None:
    with pytest.raises(generate.GeneratedPartError, match=message):
        generate.refresh(page, "p.md")


def test_the_python_api_page_shows_every_public_name_of_bridge() -> None:
    text = (ROOT / "docs" / "reference" / "python-api.md").read_text("utf-8")
    shown = {path for m in generate.BLOCK.finditer(text) if m["name"] == "python-api" for path in m["args"].split()}
    missing = sorted(name for name in openwop_bridge.__all__ if f"openwop_bridge.{name}" not in shown)
    assert not missing, f"docs/reference/python-api.md leaves out {missing} (add them to a python-api part)"


def test_docstrings_become_markdown_that_reads_on_github() -> None:
    assert markdown("Over a :class:`~openwop_bridge.store.base.Store`, see :mod:`openwop_bridge.runtime.follow`.") == (
        "Over a `Store`, see `openwop_bridge.runtime.follow`."
    )
    assert markdown("Calls ``ctx.interrupt(payload)``::") == "Calls `ctx.interrupt(payload)`:"
    engine = render("openwop_bridge.Engine")
    assert engine.startswith("### `openwop_bridge.Engine`\n\n```text\nclass Engine(\n    store: Store,\n")
    assert "#### `Engine.start`\n\n```text\nasync def start() -> None\n```" in engine
    assert not re.search(r"\bself\b", engine.split("```")[1]), "the signature leaves out self"
    config = render("openwop_bridge.EngineConfig")
    assert "- `idempotency_ttl_ms: int = 86400000`: How long an `Idempotency-Key`" in config
    assert render("openwop_bridge.TOOL_CALL_ARTIFACT").startswith(
        "### `openwop_bridge.TOOL_CALL_ARTIFACT`\n\n```text\n"
    )


def test_the_operations_texts_show_as_written() -> None:
    """Summaries and descriptions in the OpenAPI documents are plain text: ``__interrupt__`` or ``openwop_*``
    in them must not turn into bold or emphasis on the page."""
    import markdown as python_markdown

    html = python_markdown.markdown(generate.openapi_v1())
    assert "(__interrupt__, __error__)" in html
    assert "(openwop_* series)" in html
