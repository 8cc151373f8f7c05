"""An interrupt's answer schema as an MCP elicitation form, and the form's content back as an answer.

MCP forms hold flat primitive properties only. An answer schema is flattened so:

- an ``object`` with ``properties`` contributes its properties, each named by its
  path joined with ``.`` (``answers.q1``), recursively; ``required`` holds where
  every object on the path is required;
- a leaf of type string, number, integer or boolean, or with an ``enum`` of
  strings, becomes one form property (title, description, default, bounds and
  format are kept);
- anything else (arrays, free objects, ``oneOf``) has no form field: a required one
  makes the form unable to answer, and the caller is sent to the inbox instead.

An approval's schema is one variant per action; its form is the ``accept``
variant's fields (or the ``reject`` one's) without ``action``: the client's
``accept`` and ``decline`` buttons are the action. An approval's form always
reads a ``voter`` field back into the answer (whose slot it fills; the engine
decides whether the caller may fill it); the field is shown, as a choice of
names, when the caller stands in for someone (a delegation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = ("string", "number", "integer", "boolean")
KEPT = ("title", "description", "default", "minimum", "maximum", "minLength", "maxLength", "format", "enum")


@dataclass
class Form:
    """A flat form schema and the answer path of each of its properties."""

    schema: dict[str, Any]
    paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    complete: bool = True

    def answer(self, content: Mapping[str, Any] | None) -> dict[str, Any]:
        """The form's content put back at its paths (fields left empty are left out)."""
        out: dict[str, Any] = {}
        for name, value in (content or {}).items():
            path = self.paths.get(name)
            if path is None or value is None:
                continue
            target = out
            for part in path[:-1]:
                target = target.setdefault(part, {})
            target[path[-1]] = value
        return out


def _leaf(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = schema.get("type")
    enum = schema.get("enum")
    if kind not in PRIMITIVES:
        if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
            kind = "string"
        else:
            return None
    leaf: dict[str, Any] = {"type": kind}
    for key in KEPT:
        if key in schema and (key != "default" or isinstance(schema[key], str | int | float | bool)):
            leaf[key] = schema[key]
    return leaf


def _walk(schema: Mapping[str, Any], prefix: tuple[str, ...], required: bool, form: Form) -> None:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return
    needed = set(schema.get("required") or [])
    for name, sub in props.items():
        if not isinstance(sub, Mapping):
            continue
        path = (*prefix, str(name))
        is_required = required and name in needed
        if sub.get("type") == "object" or (isinstance(sub.get("properties"), Mapping) and "type" not in sub):
            _walk(sub, path, is_required, form)
            continue
        leaf = _leaf(sub)
        if leaf is None:
            form.complete = form.complete and not is_required
            continue
        flat = ".".join(path)
        form.schema["properties"][flat] = leaf
        form.paths[flat] = path
        if is_required:
            form.schema["required"].append(flat)


def flatten(schema: Mapping[str, Any]) -> Form:
    """The flat form for an object answer schema (see the module docstring)."""
    form = Form(schema={"type": "object", "properties": {}, "required": []})
    _walk(schema, (), True, form)
    if not form.schema["required"]:
        del form.schema["required"]
    return form


def approval_variant(schema: Mapping[str, Any], action: str) -> Mapping[str, Any]:
    """The variant of an approval's answer schema for one action, without ``action`` itself."""
    variants = schema.get("oneOf") or [schema]
    for variant in variants:
        props = variant.get("properties") or {}
        if (props.get("action") or {}).get("const") == action:
            rest = {k: v for k, v in props.items() if k != "action"}
            needed = [r for r in variant.get("required", []) if r != "action"]
            return {"type": "object", "properties": rest, "required": needed}
    return {"type": "object", "properties": {}}


#: The form field naming whose slot an approval's answer fills.
VOTER = "voter"


def with_voter(form: Form, voters: Sequence[str]) -> Form:
    """An approval's form that reads ``voter`` back into the answer, and asks it when ``voters`` names anyone.

    ``voters`` are the people the caller may answer for, the caller first when they may answer as
    themselves; the first is the default. The engine checks the name as any answer naming a voter.
    """
    if VOTER in form.schema["properties"]:
        return form
    form.paths[VOTER] = (VOTER,)
    if voters:
        form.schema["properties"][VOTER] = {
            "type": "string",
            "title": "Answering for",
            "enum": list(voters),
            "default": voters[0],
        }
        form.schema.setdefault("required", []).append(VOTER)
    return form
