"""JSON Schema checks shared by every kind: compiled once, problems listed by path."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from openwop_bridge import spec
from openwop_bridge.core.errors import ValidationError


def schema_errors(validator: Draft202012Validator, value: Any, prefix: str) -> list[str]:
    """Every problem ``validator`` finds in ``value``, as ``prefix/path: message`` lines."""
    out = []
    for e in validator.iter_errors(value):
        where = "/".join(str(p) for p in e.absolute_path)
        out.append(f"{prefix}{'/' + where if where else ''}: {e.message}")
    return out


def _refers(node: Any) -> bool:
    """Whether a schema (or part of one) holds a reference that needs its document to resolve."""
    if isinstance(node, Mapping):
        return any(k in ("$ref", "$dynamicRef") or _refers(v) for k, v in node.items())
    if isinstance(node, list):
        return any(_refers(v) for v in node)
    return False


@functools.cache
def spec_definition(name: str, definition: str) -> Draft202012Validator:
    """A compiled validator for ``$defs/<definition>`` of a vendored schema.

    A definition that refers to nothing is compiled on its own: the same checks and messages,
    without resolving a ``$ref`` into the vendored documents at every call. One that does goes
    through :func:`openwop_bridge.spec.validator`. The keys are the kinds' definitions, a fixed few.
    """
    target = spec.schema(name).get("$defs", {}).get(definition)
    if isinstance(target, dict) and not _refers(target):
        return Draft202012Validator(target)
    return spec.validator(name, definition)


#: Documents longer than this (as JSON) are checked every time rather than remembered.
_REMEMBERED_TEXT = 2048


def _plain(value: Any) -> bool:
    """Whether ``value`` is exactly what its JSON text decodes to (dicts, lists, str, int, finite floats ...)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    if kind is float:
        return math.isfinite(value)
    return kind in (str, int, bool) or value is None


@functools.lru_cache(maxsize=256)
def _remembered(name: str, definition: str, text: bytes, prefix: str) -> tuple[str, ...]:
    return tuple(schema_errors(spec_definition(name, definition), orjson.loads(text), prefix))


def definition_errors(name: str, definition: str, value: Any, prefix: str) -> list[str]:
    """:func:`schema_errors` of ``value`` against ``$defs/<definition>`` of a vendored schema.

    A gate's data is often the same document run after run: the problems of the last few
    hundred small plain-JSON documents are remembered by their JSON text (bounded in count and size).
    """
    if _plain(value):
        try:
            text = orjson.dumps(value)
        except orjson.JSONEncodeError:  # an integer JSON has but orjson does not encode
            text = b""
        if text and len(text) <= _REMEMBERED_TEXT:
            return list(_remembered(name, definition, text, prefix))
    return schema_errors(spec_definition(name, definition), value, prefix)


@functools.lru_cache(maxsize=512)
def _compiled(schema_json: str) -> Draft202012Validator:
    # Checked here, once per distinct schema: an invalid one raises and is not cached.
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def compile_schema(schema: Mapping[str, Any], what: str = "resumeSchema") -> Draft202012Validator:
    """A cached validator for a JSON Schema supplied by a workflow or node.

    Raises :class:`ValidationError` when the schema itself is not valid JSON Schema.
    """
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    try:
        return _compiled(text)
    except SchemaError as exc:
        raise ValidationError(f"{what} is not a valid JSON Schema: {exc.message}") from exc


def validate_against(schema: Mapping[str, Any] | None, value: Any, what: str) -> None:
    """Validate a value against a JSON Schema; :class:`ValidationError` lists the problems."""
    if not schema:
        return
    problems = schema_errors(compile_schema(schema), value, what)
    if problems:
        raise ValidationError(f"{what} does not match its schema", details={"problems": problems[:20]})
