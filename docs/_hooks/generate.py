"""MkDocs hook: the pages' generated parts, built from the code at every build so they cannot drift.

A page asks for a part with a line holding only ``<!-- generated: NAME -->``:

- ``serve-options``: every ``serve`` flag, its ``OPENWOP_BRIDGE_*`` variable, default and help, read
  from the parser ``openwop-bridge`` itself uses (``bridge.host.cli.build_parser``). A flag's
  variable is found by setting it and watching the parser's default change, so the table names
  only variables the parser really reads.
- ``cli-help``: ``--help`` of the command and each subcommand, as argparse prints it.
- ``openapi-v1`` / ``openapi-v2``: the operations of the OpenAPI documents the host serves at
  ``/v1/openapi.json`` and ``/openapi.json``, taken from an app built as ``serve`` builds it.
- ``error-codes``: every ``BridgeError`` subclass with its code, HTTP status and docstring.

An unknown name fails the build.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
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

MARKER = re.compile(r"^<!-- generated: ([a-z0-9-]+) -->$", re.MULTILINE)
#: A Sphinx role in a rendered docstring (the docstrings are written for Sphinx): ``:class:`~a.b.C```.
ROLE = re.compile(r":(?:class|func|meth|attr|mod|exc|data|obj|const):<code>(~?)([\w.]+)</code>")
PREFIX = "OPENWOP_BRIDGE_"


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
    from bridge.host.cli import build_parser

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
    from bridge.host.cli import build_parser

    os.environ.setdefault("COLUMNS", "100")
    parts = []
    with _environment():
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
    from bridge.host.cli import build_parser, build_server

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
                lines += [summary, ""]
            desc = op.get("description")
            if desc and desc != summary:
                lines += [desc, ""]
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
    _documents()  # imports every module that defines an error, as serve does
    from bridge.core.errors import BridgeError

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


PARTS: dict[str, Callable[[], str]] = {
    "serve-options": serve_options,
    "cli-help": cli_help,
    "openapi-v1": openapi_v1,
    "openapi-v2": openapi_v2,
    "error-codes": error_codes,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each ``<!-- generated: NAME -->`` line with its part."""

    def part(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in PARTS:
            raise ValueError(f"{page.file.src_uri}: no generated part named {name!r} (known: {', '.join(PARTS)})")
        return PARTS[name]()

    return MARKER.sub(part, markdown)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Show Sphinx roles in docstrings as code: ``~a.b.C`` as ``C``, anything else as written."""
    return ROLE.sub(lambda m: f"<code>{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}</code>", html)
