"""The pages that start a host of their own on 127.0.0.1:8000 (``OWN_HOST`` in ``tests/docs/snippets.py``): their
examples run as pasted, with no other host there.

This module runs after ``test_snippets.py``, whose host on that address stops when its module ends. Such a page
starts everything it needs in the background (a host, an identity provider); whatever it leaves running goes with
its session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.snippets import ROOT, pages, require_free_port, run_page, runnable, serves_its_own_host

pytestmark = [pytest.mark.node, pytest.mark.slow]

PAGES = [p for p in pages() if serves_its_own_host(p) and runnable(p)]


def test_the_pages_exist() -> None:
    assert [p.relative_to(ROOT).as_posix() for p in PAGES] == ["docs/get-started/sign-in.md"]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_with_its_own_host_runs(page: Path, tmp_path: Path) -> None:
    require_free_port()
    problems = run_page(page, "", tmp_path)
    assert not problems, "\n\n".join(problems)
