"""The pages' generated parts, built from the code, committed in the pages and checked at every build.

A generated part sits between two marker lines, ``<!-- generated: NAME [ARGS] -->`` and
``<!-- end generated: NAME -->``, so the reference reads the same on GitHub as on the site.
``scripts/docs generate`` (``python -m docs._hooks.generate --write``) rewrites every part from the
code; ``scripts/docs check`` (no ``--write``) lists the stale ones and exits 1. As an MkDocs hook this
module builds each part again: a part that differs from the committed text is a warning (so the strict
build fails, naming the page and the command), and the site shows the fresh text without the markers.

- ``serve-options``: every ``serve`` flag, its ``OPENWOP_BRIDGE_*`` variable, default and help, read
  from the parser ``openwop-bridge`` itself uses (``openwop_bridge.host.cli.build_parser``). A flag's
  variable is found by setting it and watching the parser's default change, so the table names
  only variables the parser really reads.
- ``cli-help``: ``--help`` of the command and each subcommand, as argparse prints it.
- ``openapi-v1`` / ``openapi-v2``: the operations of the OpenAPI documents the host serves at
  ``/v1/openapi.json`` and ``/openapi.json``, taken from an app built as ``serve`` builds it.
- ``error-codes``: every ``BridgeError`` subclass with its code, HTTP status and docstring.
- ``python-api PATH…``: signatures and docstrings of the objects named, by dotted path
  (``openwop_bridge.Engine``), from :mod:`docs._hooks.python_api`.

An unknown name, or a start marker without its end, is an error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: A part's start marker line: its name and the arguments the part takes (dotted paths).
START = re.compile(r"^<!-- generated: (?P<name>[a-z0-9-]+)(?P<args>(?: [\w.]+)*) -->$", re.MULTILINE)
#: A whole part: start marker, the generated text, end marker.
BLOCK = re.compile(
    r"^(?P<start><!-- generated: (?P<name>[a-z0-9-]+)(?P<args>(?: [\w.]+)*) -->)\n"
    r"(?P<body>.*?)"
    r"^(?P<end><!-- end generated: (?P=name) -->)$",
    re.MULTILINE | re.DOTALL,
)
PREFIX = "OPENWOP_BRIDGE_"
COMMAND = "scripts/docs generate"


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set and every other ``OPENWOP_BRIDGE_*`` variable removed."""
    saved = dict(os.environ)
    for name in [n for n in os.environ if n.startswith(PREFIX)]:
        del os.environ[name]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _serve_parser() -> argparse.ArgumentParser:
    from openwop_bridge.host.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["serve"]


def _defaults() -> dict[str, Any]:
    return {a.dest: a.default for a in _serve_parser()._actions}


def _variable(action: argparse.Action, base: dict[str, Any]) -> str | None:
    """The ``OPENWOP_BRIDGE_*`` variable that sets ``action``'s default, found by trying the likely names."""
    stem = action.option_strings[-1].lstrip("-").upper().replace("-", "_")
    for name in (stem, stem + "S"):
        for probe in ("48", "1"):
            try:
                with _environment(**{PREFIX + name: probe}):
                    changed = _defaults()[action.dest] != base[action.dest]
            except (ValueError, argparse.ArgumentTypeError):
                changed = True
            if changed:
                return PREFIX + name
    return None


def _plain(text: str) -> str:
    """``text`` shown as written in Markdown (OpenAPI summaries hold ``__interrupt__`` and ``openwop_*``)."""
    for char in "\\*_[]":
        text = text.replace(char, "\\" + char)
    return text.replace("<", "&lt;")


def _cell(text: str) -> str:
    """``text`` as plain text in a table cell (help texts hold ``*``, ``_`` and ``[…]``, meant literally)."""
    for char in "\\*_[]<|":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def serve_options() -> str:
    with _environment():
        base = _defaults()
        rows = ["| flag | environment variable | default | what it does |", "|---|---|---|---|"]
        for action in _serve_parser()._actions:
            if not action.option_strings or action.dest == "help":
                continue
            flag = ", ".join(action.option_strings)
            if action.metavar:
                flag += f" {action.metavar}"
            elif action.nargs != 0:
                flag += f" {action.dest.upper()}"
            if action.choices:
                flag += " {" + ",".join(map(str, action.choices)) + "}"
            var = _variable(action, base)
            default = base[action.dest]
            shown = "—" if default in (None, [], False) else f"`{default}`"
            repeat = " (repeatable)" if isinstance(action, argparse._AppendAction) else ""
            variable = f"`{var}`" if var else "—"
            rows.append(f"| `{flag}`{repeat} | {variable} | {shown} | {_cell(action.help or '')} |")
    return "\n".join(rows)


def cli_help() -> str:
    from openwop_bridge.host.cli import build_parser

    parts = []
    with _environment(COLUMNS="100"):  # argparse wraps at the terminal's width: the same on every machine
        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = [("openwop-bridge --help", parser)]
        helps += [(f"openwop-bridge {n} --help", p) for n, p in sub.choices.items()]
        for title, p in helps:
            out = io.StringIO()
            p.print_help(out)
            parts.append(f"## `{title}`\n\n```text\n{out.getvalue().rstrip()}\n```")
    return "\n\n".join(parts)


@cache
def _documents() -> tuple[dict[str, Any], dict[str, Any]]:
    """The v1 and v2 OpenAPI documents of an app built as ``openwop-bridge serve`` builds it."""
    from openwop_bridge.host.cli import build_parser, build_server

    with tempfile.TemporaryDirectory() as tmp, _environment():
        args = build_parser().parse_args(["serve", "--db", str(Path(tmp) / "docs.db")])
        app, _engine, _ring, _banner = build_server(args)
        return json.loads(app.state.openapi()), json.loads(app.state.openapi_v2())


def _operations(doc: dict[str, Any], title: str) -> str:
    lines = [f"{doc['info'].get('title', title)}, version `{doc['info'].get('version', '?')}`.", ""]
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            lines.append(f"### `{method.upper()} {path}`")
            lines.append("")
            summary = op.get("summary") or ""
            if summary:
                lines += [_plain(summary), ""]
            desc = op.get("description")
            if desc and desc != summary:
                lines += [_plain(desc), ""]
            params = [p for p in op.get("parameters", []) if "$ref" not in p]
            if params:
                lines.append("Parameters: " + ", ".join(f"`{p['name']}` ({p['in']})" for p in params) + ".")
                lines.append("")
            body = op.get("requestBody", {}).get("content", {})
            if body:
                lines.append("Request body: " + ", ".join(f"`{t}`" for t in body) + ".")
                lines.append("")
            statuses = ", ".join(f"`{s}`" for s in op.get("responses", {}))
            if statuses:
                lines.append(f"Answers: {statuses}.")
                lines.append("")
    return "\n".join(lines).rstrip()


def openapi_v1() -> str:
    return _operations(_documents()[0], "OpenWOP v1")


def openapi_v2() -> str:
    return _operations(_documents()[1], "OpenWOP v2")


def error_codes() -> str:
    import pkgutil

    import openwop_bridge
    from openwop_bridge.core.errors import BridgeError

    # Every module of the package, so that the table is the same whatever was imported before (an error some
    # feature declares in its own module, say) and lists every code any configuration may answer.
    for module in pkgutil.walk_packages(openwop_bridge.__path__, "openwop_bridge."):
        if not module.name.startswith(("openwop_bridge.bench", "openwop_bridge.__main__")):
            importlib.import_module(module.name)

    seen: list[type[BridgeError]] = []
    stack: list[type[BridgeError]] = [BridgeError]
    while stack:
        cls = stack.pop(0)
        seen.append(cls)
        stack += sorted(cls.__subclasses__(), key=lambda c: (c.__module__, c.__name__))
    rows = ["| code | HTTP status | retry may help | meaning | class |", "|---|---|---|---|---|"]
    for cls in sorted(seen, key=lambda c: (c.status, c.code, c.__name__)):
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        rows.append(
            f"| `{cls.code}` | {cls.status} | {'yes' if cls.retryable else 'no'} | {_cell(doc)} "
            f"| `{cls.__module__}.{cls.__qualname__}` |"
        )
    return "\n".join(rows)


def python_api(*paths: str) -> str:
    from docs._hooks.python_api import render_all

    return render_all(list(paths))


PARTS: dict[str, Callable[..., str]] = {
    "serve-options": serve_options,
    "cli-help": cli_help,
    "openapi-v1": openapi_v1,
    "openapi-v2": openapi_v2,
    "error-codes": error_codes,
    "python-api": python_api,
}


class GeneratedPartError(ValueError):
    """A page asks for a part that does not exist, or leaves one without its end marker."""


def refresh(text: str, where: str) -> tuple[str, list[str]]:
    """``text`` with every generated part built again, and the names of the parts that changed."""
    complete = {m.start() for m in BLOCK.finditer(text)}
    for start in START.finditer(text):
        if start.start() not in complete:
            name = start["name"]
            raise GeneratedPartError(
                f"{where}: '<!-- generated: {name} -->' without its '<!-- end generated: {name} -->'"
            )
    stale: list[str] = []

    def part(match: re.Match[str]) -> str:
        name, args = match["name"], match["args"].split()
        if name not in PARTS:
            raise GeneratedPartError(f"{where}: no generated part named {name!r} (known: {', '.join(PARTS)})")
        body = PARTS[name](*args).rstrip("\n") + "\n"
        if body != match["body"] and name not in stale:
            stale.append(name)
        return f"{match['start']}\n{body}{match['end']}"

    return BLOCK.sub(part, text), stale


def pages() -> list[Path]:
    """Every page of the site."""
    return sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)


def stale_pages() -> dict[Path, list[str]]:
    """The pages whose committed generated parts differ from the code, with those parts' names."""
    found = {}
    for page in pages():
        _, stale = refresh(page.read_text("utf-8"), str(page.relative_to(ROOT)))
        if stale:
            found[page] = stale
    return found


def without_markers(text: str) -> str:
    """``text`` without the marker lines (the site shows the parts alone)."""
    return BLOCK.sub(lambda m: m["body"].rstrip("\n"), text)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Build each part again; warn (failing a strict build) when the committed text is stale."""
    fresh, stale = refresh(markdown, page.file.src_uri)
    if stale:
        logging.getLogger("mkdocs.hooks.generate").warning(
            "docs/%s: generated part stale (%s): run %s and commit the page",
            page.file.src_uri,
            ", ".join(stale),
            COMMAND,
        )
    return without_markers(fresh)


def main(argv: list[str] | None = None) -> int:
    """``--write``: rewrite the stale parts of every page; without it, list them and exit 1 if any."""
    parser = argparse.ArgumentParser(prog="python -m docs._hooks.generate", description=main.__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the pages whose generated parts are stale")
    args = parser.parse_args(argv)
    stale = stale_pages()
    for page, names in stale.items():
        where = page.relative_to(ROOT)
        if args.write:
            page.write_text(refresh(page.read_text("utf-8"), str(where))[0], "utf-8")
            print(f"{where}: rewrote {', '.join(names)}")
        else:
            print(f"{where}: generated part stale ({', '.join(names)})")
    if stale and not args.write:
        print(f"run {COMMAND} and commit the pages")
        return 1
    if not stale:
        print("every generated part is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
