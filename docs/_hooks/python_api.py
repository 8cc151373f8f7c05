"""The Python API reference as Markdown: signatures and docstrings of public objects, read with ``inspect``.

The docstrings are written for Sphinx; here they become Markdown that reads the same on GitHub and on
the site: ````literal```` is ```literal```, a role such as ``:class:`~openwop_bridge.store.base.Store``` is the
name in code (```Store```, the last part when it starts with ``~``). An object is shown as

- a class: its heading, ``class Name(signature)``, its docstring, then each public method and property
  it defines itself that has a docstring, in source order; a dataclass shows ``@dataclass class Name``
  and lists its fields (its parameters: name, type, default and the ``#:`` comment above each);
- a function: its heading, ``[async] def name(signature)`` and its docstring;
- a module: its heading and docstring;
- a constant: its heading, ``NAME = value`` and the ``#:`` comment above its assignment.

Nothing here depends on the machine: a default whose ``repr`` holds an address shows as ``…``.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import re
import sys
import types
from typing import Any, Literal, get_args, get_origin

#: A Sphinx role: ``:class:`~a.b.C``` or ``:meth:`name```.
ROLE = re.compile(r":(?:class|func|meth|attr|mod|exc|data|obj|const|py:\w+):`(~?)([^`]+)`")
#: The width past which a signature is split one parameter a line.
WIDTH = 100


class _Shown(str):
    """An annotation kept as its source text (``from __future__ import annotations``): shown without quotes."""

    def __repr__(self) -> str:
        return str(self)


def markdown(doc: str) -> str:
    """A Sphinx docstring (already dedented) as Markdown."""
    text = ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", doc)
    text = re.sub(r"``(.+?)``", r"`\1`", text, flags=re.DOTALL)
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


def _own_doc(obj: Any) -> str:
    """``obj``'s own docstring, dedented ('' when it has none: no docstring inherited from a base)."""
    doc = obj.__doc__ if isinstance(getattr(obj, "__doc__", None), str) else None
    return inspect.cleandoc(doc) if doc else ""


def _value(value: Any) -> str:
    if get_origin(value) is Literal:  # a type alias of strings: its values, one a line when long
        return "Literal[" + ", ".join(repr(a) for a in get_args(value)) + "]"
    text = repr(value)
    return "…" if " at 0x" in text or len(text) > 80 else text


def signature(obj: Any, name: str, *, bound: bool = False) -> str:
    """``name(params) -> result`` of a callable (without its first parameter when ``bound``), split one
    parameter a line when longer than :data:`WIDTH`."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(…)"
    params = list(sig.parameters.values())[1 if bound else 0 :]
    for i, p in enumerate(params):
        if isinstance(p.annotation, str):
            p = p.replace(annotation=_Shown(p.annotation))
        if p.default is not p.empty:
            p = p.replace(default=_Shown(_value(p.default)))
        params[i] = p
    returns = sig.return_annotation
    if inspect.isclass(obj):
        returns = inspect.Signature.empty
    elif isinstance(returns, str):
        returns = _Shown(returns)
    sig = sig.replace(parameters=params, return_annotation=returns)
    if len(name) + len(str(sig)) <= WIDTH or len(params) < 2:
        return f"{name}{sig}"
    inner = str(sig.replace(return_annotation=inspect.Signature.empty))
    tail = str(sig)[len(inner) :]
    return name + "(\n" + "".join(f"    {piece},\n" for piece in _split_top_level(inner[1:-1])) + ")" + tail


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and quotes."""
    pieces, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:i].strip())
            start = i + 1
    pieces.append(text[start:].strip())
    return pieces


def _code(text: str) -> str:
    return f"```text\n{text}\n```"


def _comment_above(module: types.ModuleType, name: str) -> str:
    """The ``#:`` comment lines right above ``name``'s assignment in ``module``'s source."""
    try:
        lines = inspect.getsource(module).splitlines()
    except (OSError, TypeError):
        return ""
    for i, line in enumerate(lines):
        if re.match(rf"\s*{re.escape(name)}\s*[:=]", line):
            comment: list[str] = []
            j = i - 1
            while j >= 0 and lines[j].strip().startswith("#:"):
                comment.insert(0, lines[j].strip()[2:].strip())
                j -= 1
            if comment:
                return " ".join(comment)
    return ""


def _fields(cls: type) -> str:
    """A dataclass's fields as a Markdown list: name, type, default and the ``#:`` comment above each."""
    try:
        source = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        source = []
    rows = []
    for field in dataclasses.fields(cls):
        if field.name.startswith("_"):
            continue
        if field.default is not dataclasses.MISSING:
            default = f" = {_value(field.default)}"
        elif field.default_factory is not dataclasses.MISSING:
            factory = getattr(field.default_factory, "__name__", "<lambda>")
            default = " = …" if factory.startswith("<") else f" = {factory}()"
        else:
            default = ""
        comment = ""
        for i, line in enumerate(source):
            if re.match(rf"\s+{re.escape(field.name)}\s*:", line):
                lines = []
                j = i - 1
                while j >= 0 and source[j].strip().startswith("#:"):
                    lines.insert(0, source[j].strip()[2:].strip())
                    j -= 1
                comment = " ".join(lines)
                break
        kind = field.type if isinstance(field.type, str) else inspect.formatannotation(field.type)
        rows.append(f"- `{field.name}: {kind}{default}`" + (f": {markdown(comment)}" if comment else ""))
    return "Fields:\n\n" + "\n".join(rows) if rows else ""


def _members(cls: type, level: int) -> list[str]:
    parts = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        target = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        if isinstance(target, property):
            doc = _own_doc(target)
            kind = target.fget.__annotations__.get("return", "") if target.fget else ""
            head = f"{name}: {kind}" if kind else name
            shown = f"property {head}"
        elif inspect.isfunction(target):
            doc = _own_doc(target)
            prefix = "async def " if inspect.iscoroutinefunction(target) else "def "
            if isinstance(member, classmethod):
                prefix = "classmethod " + prefix
            elif isinstance(member, staticmethod):
                prefix = "staticmethod " + prefix
            shown = prefix + signature(target, name, bound=not isinstance(member, staticmethod))
        else:
            continue
        if not doc:
            continue
        parts.append(f"{'#' * level} `{cls.__name__}.{name}`\n\n{_code(shown)}\n\n{markdown(doc)}")
    return parts


def render(path: str, level: int = 3) -> str:
    """The Markdown of the object at the dotted ``path`` (``openwop_bridge.Engine``), its heading at ``level``."""
    module_name, _, attr = path.rpartition(".")
    try:
        obj = importlib.import_module(path)
        attr = ""
    except ImportError:
        obj = getattr(importlib.import_module(module_name), attr)
    heading = f"{'#' * level} `{path}`"
    if isinstance(obj, types.ModuleType):
        return f"{heading}\n\n{markdown(_own_doc(obj))}".rstrip()
    if inspect.isclass(obj):
        parts = [heading]
        if issubclass(obj, enum.Enum):
            parts.append(_code(f"class {obj.__name__}({', '.join(b.__name__ for b in obj.__bases__)})"))
        else:
            bases = [b.__name__ for b in obj.__bases__ if b is not object]
            # A dataclass's parameters are its fields, listed below with their comments.
            shown = obj.__name__ if dataclasses.is_dataclass(obj) else signature(obj, obj.__name__)
            decorator = "@dataclass\n" if dataclasses.is_dataclass(obj) else ""
            parts.append(_code(f"{decorator}class {shown}" + (f"  # a {', '.join(bases)}" if bases else "")))
        doc = _own_doc(obj)
        if doc:
            parts.append(markdown(doc))
        if dataclasses.is_dataclass(obj):
            fields = _fields(obj)
            if fields:
                parts.append(fields)
        parts += _members(obj, level + 1)
        return "\n\n".join(parts)
    if callable(obj) and get_origin(obj) is None:
        prefix = "async def " if inspect.iscoroutinefunction(obj) else "def "
        name = getattr(obj, "__name__", attr)
        return "\n\n".join(p for p in (heading, _code(prefix + signature(obj, name)), markdown(_own_doc(obj))) if p)
    comment = next(
        (
            c
            for m in list(sys.modules.values())
            if isinstance(m, types.ModuleType)
            and m.__name__.split(".")[0] == path.split(".")[0]
            and getattr(m, attr, None) is obj
            and (c := _comment_above(m, attr))
        ),
        "",
    )
    return "\n\n".join(p for p in (heading, _code(f"{attr} = {_value(obj)}"), markdown(comment)) if p)


def render_all(paths: list[str]) -> str:
    """The Markdown of each object in ``paths``, in order."""
    return "\n\n".join(render(p) for p in paths)
